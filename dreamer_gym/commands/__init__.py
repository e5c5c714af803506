"""The bodies of ``dreamer-gym``'s commands, one module per room they drive; :mod:`dreamer_gym.cli` only parses and
dispatches (STYLE 22).

* :mod:`.flags`: what several commands share: the env and LLM flags generated from the config dataclasses, the
  filter flags (``--families``, ``--seeds``, ``--max-families``), ``--config`` and its recipes, ``--track`` NAME|FILE.
* :mod:`.acquire`: ``acquire`` (a frozen bank pool, by real acquisition).
* :mod:`.consolidate`: ``consolidate`` and ``evaluate`` (the env, consolidators from the registry, tables).
* :mod:`.studies`: ``validity``, ``power`` and ``learnability`` (:mod:`dreamer_gym.studies`).
* :mod:`.train`: ``train`` (:mod:`dreamer_gym.training`'s algorithms).

``leaderboard`` lives in :mod:`dreamer_gym.leaderboard.board_commands` and ``serve`` in
:mod:`dreamer_gym.remote.openenv_server`, beside their rooms.
"""
