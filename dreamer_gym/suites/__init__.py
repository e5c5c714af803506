"""Task-suite adapters. Heavy simulators are imported lazily, inside the adapter that needs them."""
from dreamer_gym.suites.base import EpisodeTask, StepOutcome, TaskSuite

__all__ = ["SUITES", "EpisodeTask", "StepOutcome", "TaskSuite", "make_suite"]

# "alfworld": the official games (needs `alfworld-download`); "alfworld-gen": games generated offline;
# "miniwob": MiniWoB++ pages through BrowserGym in a headless Chromium (the `web` extra);
# "webarena": WebArena through BrowserGym (the `webarena` extra and the self-hosted sites named by WA_*)
SUITES = ("scienceworld", "alfworld", "alfworld-gen", "miniwob", "webarena")


def make_suite(name: str, **kwargs: object) -> TaskSuite:
    """Build a suite adapter by name (one of :data:`SUITES`)."""
    if name == "scienceworld":
        from dreamer_gym.suites.scienceworld import ScienceWorldSuite

        return ScienceWorldSuite(**kwargs)  # type: ignore[arg-type]
    if name in ("alfworld", "alfworld-gen"):
        from dreamer_gym.suites.alfworld import ALFWorldSuite

        return ALFWorldSuite(source="official" if name == "alfworld" else "generated", **kwargs)  # type: ignore[arg-type]
    if name == "miniwob":
        from dreamer_gym.suites.miniwob import MiniWoBSuite

        return MiniWoBSuite(**kwargs)  # type: ignore[arg-type]
    if name == "webarena":
        from dreamer_gym.suites.webarena import WebArenaSuite

        return WebArenaSuite(**kwargs)  # type: ignore[arg-type]
    raise ValueError(f"Expected `suite` to be one of {list(SUITES)}, got {name!r}")
