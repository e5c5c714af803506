"""The GRPO method: an LLM policy that edits a region through constrained commands, trained group-relatively.

* :mod:`~dreamer_gym.methods.grpo.config`: ``GRPOConfig``;
* :mod:`~dreamer_gym.methods.grpo.commands`, :mod:`~dreamer_gym.methods.grpo.decoding`: the command grammars
  (keep, drop, ops) and the decoder that keeps the model inside them;
  :mod:`~dreamer_gym.methods.grpo.bank_listing`: what the ``ops`` listing adds on a tool-contract-2 env;
* :mod:`~dreamer_gym.methods.grpo.rollout`, :mod:`~dreamer_gym.methods.grpo.advantages`,
  :mod:`~dreamer_gym.methods.grpo.trainer`: our trainer, one readable loop (rollout, advantage, loss, log);
* :mod:`~dreamer_gym.methods.grpo.probe`: does the untrained policy's reward vary at all (before training);
* :mod:`~dreamer_gym.methods.grpo.trl_recipe`, :mod:`~dreamer_gym.methods.grpo.trl_bridge`,
  :mod:`~dreamer_gym.methods.grpo.trl_env`: TRL's GRPOTrainer on the same env, from one recipe YAML;
* :mod:`~dreamer_gym.methods.grpo.consolidator`: the trained policy as a consolidator (``grpo:CHECKPOINT``);
* :mod:`~dreamer_gym.methods.grpo.algorithm`: ``dreamer-gym train --algo grpo`` and ``--algo trl``.
"""
