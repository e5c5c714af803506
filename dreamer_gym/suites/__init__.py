"""Task-suite adapters. Heavy simulators are imported lazily, inside the adapter that needs them."""
from dreamer_gym.suites.base import EpisodeTask, StepOutcome, TaskSuite

__all__ = ["EpisodeTask", "StepOutcome", "TaskSuite", "make_suite"]


def make_suite(name: str, **kwargs: object) -> TaskSuite:
    """Build a suite adapter by name (``"scienceworld"``)."""
    if name == "scienceworld":
        from dreamer_gym.suites.scienceworld import ScienceWorldSuite

        return ScienceWorldSuite(**kwargs)  # type: ignore[arg-type]
    raise ValueError(f"Expected `suite` to be one of ['scienceworld'], got {name!r}")
