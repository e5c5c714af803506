"""Task suites: one adapter per simulator plus its :class:`SuiteSpec`, found through the registry.

Heavy simulators are imported lazily, inside the adapter that needs them. Built-in suites:
"scienceworld"; "alfworld" (the official games, needs `alfworld-download`); "alfworld-gen" (ALFWorld-engine
games generated offline); "miniwob" (MiniWoB++ pages through BrowserGym in a headless Chromium);
"webarena" (BrowserGym, needs the self-hosted sites named by WA_*).
"""
from dreamer_gym.suites.base import SPLITS, EpisodeTask, StepOutcome, TaskSuite
from dreamer_gym.suites.check import SuiteCheckError, SuiteReport, check_suite
from dreamer_gym.suites.registry import BUILTIN, get_suite_spec, register_suite, suite_names
from dreamer_gym.suites.spec import AcquisitionProfile, OracleProcedure, SuiteSpec

SUITES: tuple[str, ...] = tuple(BUILTIN)

__all__ = [
    "SPLITS", "SUITES", "AcquisitionProfile", "EpisodeTask", "OracleProcedure", "StepOutcome", "SuiteCheckError",
    "SuiteReport", "SuiteSpec", "TaskSuite", "check_suite", "get_suite_spec", "make_suite", "register_suite",
    "suite_names",
]


def make_suite(name: str | SuiteSpec, **kwargs: object) -> TaskSuite:
    """Build a suite adapter by registered name (see :func:`suite_names`) or from a spec."""
    spec = name if isinstance(name, SuiteSpec) else get_suite_spec(name)
    return spec.make(**kwargs)
