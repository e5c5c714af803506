"""Error hierarchy: programmer and configuration errors only.

Bad *policy* output never raises: the environment answers it with an error observation.
"""
from __future__ import annotations


class DreamerGymError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(DreamerGymError, ValueError):
    """A configuration value is invalid; the message names the field and the fix."""


class FrozenParameterError(ConfigError):
    """Someone tried to override a parameter that defines a frozen benchmark track."""


class StoreError(DreamerGymError):
    """The SQLite store refused an operation (e.g. rewriting a stored bank version)."""


class SuiteError(DreamerGymError, RuntimeError):
    """The underlying simulator misbehaved (JVM died, unknown task, ...)."""


class PoolHashMismatch(DreamerGymError):
    """A rebuilt or loaded bank pool does not match the hash pinned in the env spec."""


class LLMError(DreamerGymError, RuntimeError):
    """An LLM backend failed: unreachable server, unknown model, timeout after its retries."""


class LLMTimeout(LLMError, TimeoutError):
    """A generation took longer than its configured timeout (after retries)."""


class RewardServiceError(DreamerGymError, RuntimeError):
    """The reward service refused a request (a region over the limits, a sealed track) or died."""


class EvaluationFailed(RewardServiceError):
    """Episodes of a commit's evaluation did not run (a simulator died, an LLM timed out, a package is
    missing), so there is no reward to give: ``step`` returns a float, and a number computed from episodes
    that did not run would look like a measurement. ``errors`` holds each distinct reason once."""

    def __init__(self, message: str, errors: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.errors = tuple(errors)

    def __reduce__(self):  # noqa: ANN204 - it crosses the reward service's process boundary with its reasons
        return (type(self), (str(self), self.errors))
