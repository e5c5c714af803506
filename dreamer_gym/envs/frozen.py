"""Moved to dreamer_gym.contract.frozen (issue 28); this shim goes in 0.3."""
from dreamer_gym._moved import forward

__getattr__ = forward(__name__, "dreamer_gym.contract.frozen")
