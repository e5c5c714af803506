"""The WebArena adapter where no WebArena server exists: it fails at once without the WA_* sites, starts
nothing when built, partitions WebArena's real task ids into splits, and (where browsergym-webarena is
installed) agrees with the package's own task registry. Real WebArena episodes need the self-hosted sites
and cannot run here; the shared browser machinery they use is exercised on real MiniWoB pages."""

from __future__ import annotations

import importlib.util
import time
from collections import Counter
from pathlib import Path

import gymnasium
import psutil
import pytest

from dreamer_gym.errors import SuiteError
from dreamer_gym.suites import SUITES, make_suite
from dreamer_gym.suites.base import SPLITS, EpisodeTask, TaskSuite
from dreamer_gym.suites.registry import check_available
from dreamer_gym.suites.webarena import FAMILIES, WEBARENA_VARS, WebArenaSuite, split_of, task_table

PACKAGE_INSTALLED = importlib.util.find_spec("browsergym") is not None and (
    importlib.util.find_spec("browsergym.webarena") is not None
)
# a reserved port nothing listens on: the suite must not contact these before start()
FAKE_SITES = {name: f"http://127.0.0.1:9/{name.lower()}" for name in WEBARENA_VARS}


def live_children() -> set[int]:
    return {
        p.pid
        for p in psutil.Process().children(recursive=True)
        if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    }


def chromium_children() -> set[int]:
    out = set()
    for pid in live_children():
        try:
            if "chrom" in psutil.Process(pid).name():
                out.add(pid)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture
def no_sites(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in WEBARENA_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake_sites(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, url in FAKE_SITES.items():
        monkeypatch.setenv(name, url)


# --- failing at once -----------------------------------------------------------------------------------------
def test_without_sites_make_suite_fails_at_once_naming_every_variable(no_sites: None, tmp_path: Path) -> None:
    before = live_children()
    t0 = time.perf_counter()
    with pytest.raises(SuiteError) as err:
        make_suite("webarena", cache_dir=tmp_path)
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.0, elapsed
    message = str(err.value)
    assert all(name in message for name in WEBARENA_VARS), message
    assert "docker" in message.lower() and "webarena" in message
    assert live_children() <= before  # no browser (nor anything else) was started
    assert not chromium_children()
    with pytest.raises(SuiteError, match="WA_HOMEPAGE"):
        check_available("webarena")
    assert not list(tmp_path.iterdir())  # not even the Chromium wrapper was written


def test_one_missing_variable_is_named_alone(fake_sites: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WA_MAP")
    with pytest.raises(SuiteError, match=r"web sites, and WA_MAP is not set\. Start"):
        WebArenaSuite()


def test_built_with_sites_set_starts_nothing_and_has_no_oracle(fake_sites: None, tmp_path: Path) -> None:
    before = live_children()
    t0 = time.perf_counter()
    suite = make_suite("webarena", cache_dir=tmp_path)
    assert time.perf_counter() - t0 < 1.0
    assert "webarena" in SUITES and isinstance(suite, TaskSuite) and suite.name == "webarena"
    assert suite.families == FAMILIES and suite.step_limit == 30
    assert live_children() <= before
    task = EpisodeTask("shopping_admin", 0)  # "What is the top-1 best-selling product in 2022"
    with pytest.raises(SuiteError, match="no scripted solutions"):
        suite.gold_path(task)
    with pytest.raises(ValueError, match="family"):
        suite.variations("wikipedia", "dev")  # WebArena has no wikipedia-only task
    with pytest.raises(ValueError, match="split"):
        suite.variations("gitlab", "validation")
    with pytest.raises(ValueError, match="a shopping_admin task"):
        suite.start(EpisodeTask("reddit", 0))
    with pytest.raises(ValueError, match="not a WebArena task id"):
        suite.gold_path(EpisodeTask("reddit", 812))
    with pytest.raises(ValueError, match="step_limit"):
        WebArenaSuite(step_limit=0)
    with pytest.raises(SuiteError, match="apt-get install"):
        WebArenaSuite(chromium=tmp_path / "no-such-chromium")
    with pytest.raises(RuntimeError, match="start"):
        suite.step('answer "Quest Lumaflex Band"')
    if not PACKAGE_INSTALLED:  # starting needs the package: it fails before any browser starts
        with pytest.raises(gymnasium.error.DependencyNotInstalled, match=r"dreamer-gym\[webarena\]"):
            suite.start(task)
        with pytest.raises(gymnasium.error.DependencyNotInstalled, match="docs/webarena.md"):
            check_available("webarena")
    assert live_children() <= before and not chromium_children()
    suite.close()


# --- families and splits ---------------------------------------------------------------------------------------
def test_splits_partition_the_task_ids_deterministically(fake_sites: None, tmp_path: Path) -> None:
    suite, again = WebArenaSuite(cache_dir=tmp_path), WebArenaSuite(cache_dir=tmp_path)
    ids = {(f, s): suite.variations(f, s) for f in FAMILIES for s in SPLITS}
    assert ids == {(f, s): again.variations(f, s) for f in FAMILIES for s in SPLITS}
    seen: list[int] = [i for v in ids.values() for i in v]
    assert sorted(seen) == list(range(812))  # every task once: a partition
    for (family, split), got in ids.items():
        assert got, (family, split)  # every family is in every split
        assert list(got) == sorted(got)
        assert all(split_of(i) == split for i in got)
        assert all(i % 5 in {"train": (0, 1, 2), "dev": (3,), "test": (4,)}[split] for i in got)
    per_split = Counter(split_of(i) for i in seen)
    assert per_split == {"train": 488, "dev": 162, "test": 162}
    per_family = Counter(t.family for t in task_table())
    assert per_family == {"shopping": 187, "shopping_admin": 182, "gitlab": 180, "map": 109, "reddit": 106,
                          "multi-site": 48}  # fmt: skip
    # most intent templates have a train instance and a dev or test one: procedures can transfer
    templates: dict[int, set[str]] = {}
    for t in task_table():
        templates.setdefault(t.intent_template_id, set()).add(t.split)
    assert len(templates) == 190
    assert sum("train" in s and len(s) > 1 for s in templates.values()) == 161
