"""`check_suite` passes on every suite that runs here, reports the ones that cannot run with their fix, and
fails on deliberately broken suites, each with its own message."""
from __future__ import annotations

import dataclasses

import pytest

from dreamer_gym.errors import SuiteError
from dreamer_gym.suites import EpisodeTask, StepOutcome
from dreamer_gym.testing import SuiteCheckError, check_suite

import toy_suite
from toy_suite import ToySuite

LIVE = {"scienceworld": pytest.mark.jvm, "alfworld-gen": pytest.mark.alfworld, "miniwob": pytest.mark.browser}


@pytest.mark.parametrize("name", [pytest.param(n, marks=m) for n, m in LIVE.items()])
def test_check_suite_passes_on_shipped_suites(name: str) -> None:
    report = check_suite(name)
    assert report.available and not report.skipped
    assert report.passed == ["spec", "families and splits", "episode", "gold path solves", "acquisition",
                             "memory-following reader", "close"]


@pytest.mark.parametrize("name, fix", [("alfworld", "alfworld-download"), ("webarena", "WA_SHOPPING")])
def test_check_suite_reports_unavailable_suites_with_their_fix(name: str, fix: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ALFWORLD_DATA", "WA_SHOPPING"):
        monkeypatch.delenv(var, raising=False)  # this machine's environment, not the suite under test
    report = check_suite(name)
    assert not report.available and report.passed == ["spec"]
    assert fix in report.unavailable_reason and "live" in report.skipped


# --- broken suites: one flaw each ---------------------------------------------------------------------------
class OverlappingSplits(ToySuite):
    def variations(self, family: str, split: str) -> tuple[int, ...]:
        return (0, 1, 2) if split in ("train", "dev") else super().variations(family, split)


class RaisesOnBadAction(ToySuite):
    def step(self, action: str) -> StepOutcome:
        if action.startswith("xyzzy"):
            raise ValueError(f"unknown action {action}")
        return super().step(action)


class ChangingStarts(ToySuite):
    def __init__(self) -> None:
        super().__init__()
        self.starts = 0

    def start(self, task: EpisodeTask) -> str:
        self.starts += 1
        return f"{super().start(task)} (visit {self.starts})"


class GoldThatFails(ToySuite):
    def gold_path(self, task: EpisodeTask) -> tuple[str, ...]:
        return ("look", "go to door")


class NoLook(ToySuite):
    look = None  # type: ignore[assignment]

    def __getattribute__(self, name: str):  # noqa: ANN204 - hide the member as a missing one
        if name == "look":
            raise AttributeError(name)
        return super().__getattribute__(name)


class WrongName(ToySuite):
    name = "not-toy"


class ScoreOffScale(ToySuite):
    def step(self, action: str) -> StepOutcome:
        out = super().step(action)
        return StepOutcome(out.observation, out.score * 10 if out.score else 0.0, out.done)


def unavailable_without_fix() -> None:
    raise SuiteError("no")


def unavailable_with_fix() -> None:
    raise SuiteError("the toy server is not running: start it with `toy-server --port 9000`")


def _spec(adapter: type, **changes: object):  # noqa: ANN202
    return dataclasses.replace(toy_suite.SPEC, adapter=adapter, **changes)


@pytest.mark.parametrize("spec, message", [
    (_spec(OverlappingSplits), r"variation 0 is in both 'train' and 'dev': splits must be disjoint"),
    (_spec(RaisesOnBadAction), r"a bad action must be answered with an observation\): raised ValueError"),
    (_spec(ChangingStarts), r"two starts of the same task differ: starts must be deterministic"),
    (_spec(GoldThatFails), r"gold_path\(.*\): replaying it scored 0.0, expected 100"),
    (_spec(NoLook), r"lacks TaskSuite members \['look'\]"),
    (_spec(WrongName), r"is named 'not-toy', expected 'toy'"),
    (_spec(ScoreOffScale), r"expected a float score in \[-100, 100\], got 1000.0"),
    (_spec(ToySuite, follower="toy_suite:NoSuchFollower"), r"`follower`: raised AttributeError"),
    (_spec(ToySuite, check_available=unavailable_without_fix), r"without saying how to fix it: 'no'"),
    (_spec(ToySuite, oracle_facts=lambda family, gold: []), r"does not pickle"),
], ids=["overlapping-splits", "bad-action-raises", "changing-starts", "gold-fails", "no-look", "wrong-name",
        "score-off-scale", "missing-follower", "unavailable-without-fix", "lambda-in-spec"])
def test_check_suite_names_each_breach(spec, message: str) -> None:  # noqa: ANN001
    with pytest.raises(SuiteCheckError, match=message):
        check_suite(spec)


def test_an_unavailable_suite_with_a_fix_is_reported_not_failed() -> None:
    report = check_suite(_spec(ToySuite, check_available=unavailable_with_fix))
    assert not report.available and "toy-server --port 9000" in report.unavailable_reason


def test_spec_only_check_starts_nothing() -> None:
    report = check_suite(_spec(GoldThatFails), live=False)
    assert report.passed == ["spec"] and report.skipped == {"live": "live=False"}
