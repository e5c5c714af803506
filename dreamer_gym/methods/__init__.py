"""Each training method in one package: its config, trainer, policy-as-consolidator and CLI entry together.

* :mod:`dreamer_gym.methods.grpo`: an LLM policy trained with GRPO on the env's commands (our trainer, and
  TRL's GRPOTrainer from a recipe);
* :mod:`dreamer_gym.methods.oplevel`: a small torch policy (or sb3-contrib's MaskablePPO) over one op per entry.

A method sits above what it uses (training's shared logs and learning-signal checks, consolidators, envs) and
nothing below imports it: the consolidator and algorithm registries name its classes as ``"module:attr"``
strings. Importing this package imports no method (torch loads only when a method's trainer does).
"""
