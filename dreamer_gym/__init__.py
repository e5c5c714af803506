"""dreamer_gym: learned offline memory consolidation for LLM agents, as a Gymnasium environment.

Importing the package registers the environment ids; it never starts Java, a browser or torch.
"""
from dreamer_gym.registration import register_envs

__version__ = "0.1.0"

register_envs()

__all__ = ["__version__", "register_envs"]
