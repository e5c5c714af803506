"""dreamer_gym's consolidation ids as a verifiers environment: ``vf-eval dreamer-gym-verifiers``.

verifiers 0.4 resolves a taskset id to a package of that name (``-`` -> ``_``) and loads the ``Taskset``,
``Env`` and ``Harness`` subclasses it exports in ``__all__``; this package is that name, and the classes live
in :mod:`dreamer_gym.remote.verifiers_env` (docs/verifiers.md). Importing it imports verifiers.
"""
from dreamer_gym.remote.verifiers_env import (
    ConsolidationData,
    ConsolidationEnv,
    ConsolidationEnvConfig,
    ConsolidationHarness,
    ConsolidationTask,
    ConsolidationTaskset,
    ConsolidationTasksetConfig,
    load_environment,
)

__all__ = ["ConsolidationData", "ConsolidationEnv", "ConsolidationEnvConfig", "ConsolidationHarness",
           "ConsolidationTask", "ConsolidationTaskset", "ConsolidationTasksetConfig",
           "load_environment"]
