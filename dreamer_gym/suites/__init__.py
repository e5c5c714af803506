"""Task suites: one adapter per simulator plus its :class:`SuiteSpec`, found through the registry.

Heavy simulators are imported lazily, inside the adapter that needs them. Built-in suites:
"scienceworld"; "alfworld" (the official games, needs `alfworld-download`); "alfworld-gen" (ALFWorld-engine
games generated offline); "miniwob" (MiniWoB++ pages through BrowserGym in a headless Chromium);
"webarena" (BrowserGym, needs the self-hosted sites named by WA_*).
"""
from dreamer_gym._moved import forward_names
from dreamer_gym.suites.base import SPLITS, EpisodeTask, StepOutcome, TaskSuite
from dreamer_gym.suites.registry import BUILTIN, get_suite_spec, register_suite, suite_names
from dreamer_gym.suites.spec import AcquisitionProfile, OracleProcedure, SuiteSpec

SUITES: tuple[str, ...] = tuple(BUILTIN)
# moved up to dreamer_gym.testing (issue 28): served from there, with a warning, until 0.3
__getattr__ = forward_names(__name__, "dreamer_gym.testing", ("SuiteCheckError", "SuiteReport", "check_suite"))

__all__ = [
    "SPLITS", "SUITES", "AcquisitionProfile", "EpisodeTask", "OracleProcedure", "StepOutcome", "SuiteSpec",
    "TaskSuite", "get_suite_spec", "make_suite", "register_suite",
    "suite_names",
]


def make_suite(name: str | SuiteSpec, **kwargs: object) -> TaskSuite:
    """Build a suite adapter by registered name (see :func:`suite_names`) or from a spec."""
    spec = name if isinstance(name, SuiteSpec) else get_suite_spec(name)
    return spec.make(**kwargs)
