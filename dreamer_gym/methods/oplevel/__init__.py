"""The op-level method: one op per region entry (drop, keep, merge, abstract; on a tool-contract-2 env also
synthesize, whose text the env's ``synthesize`` tool writes; :mod:`dreamer_gym.envs.ops`), texts from the rules, a
policy choosing the ops.

* :mod:`~dreamer_gym.methods.oplevel.wrapper`: ``OpLevelWrapper`` (fixed-size spaces and an action mask, for
  any RL library) and ``RegionSeeds`` (the training regions);
* :mod:`~dreamer_gym.methods.oplevel.config`: ``OpLevelConfig`` (and what SB3's config shares);
* :mod:`~dreamer_gym.methods.oplevel.trainer`: our group-relative REINFORCE trainer and its torch policy;
* :mod:`~dreamer_gym.methods.oplevel.sb3`: sb3-contrib's MaskablePPO on the wrapper, unchanged;
* :mod:`~dreamer_gym.methods.oplevel.consolidator`: both trained policies as consolidators (``oplevel:``, ``sb3:``);
* :mod:`~dreamer_gym.methods.oplevel.algorithm`: ``dreamer-gym train --algo oplevel`` and ``--algo sb3``.
"""
