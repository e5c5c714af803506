"""Moved to dreamer_gym.methods.grpo.trl_recipe (issue 28); this shim goes in 0.3."""
import importlib
import sys

from dreamer_gym._moved import forward

__getattr__ = forward(__name__, "dreamer_gym.methods.grpo.trl_recipe")

if __name__ == "__main__":  # `python -m dreamer_gym.training.trl_recipe CONFIG`, as recorded commands run it
    sys.exit(importlib.import_module("dreamer_gym.methods.grpo.trl_recipe").main())
