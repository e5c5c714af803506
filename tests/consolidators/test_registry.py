"""The consolidator registry: built-in names, your own by register_consolidator or by an entry point, and
a clear error naming the known ones; the CLI runs a consolidator defined outside the package by name."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dreamer_gym.consolidators import (
    KeepAllConsolidator,
    RandomConsolidator,
    consolidator_names,
    make_consolidator,
    register_consolidator,
)
from dreamer_gym.consolidators.registry import CONSOLIDATORS
from dreamer_gym.errors import ConfigError

BUILTIN = ("keep-all", "empty", "dedupe", "blind", "oracle", "prose-oracle", "wrong-procedures", "random", "prompted")

MODULE = '''
from dreamer_gym.consolidators import call


class Mine:
    """Keeps the region's first half."""

    name = "mine"

    def actions(self, env, obs, info):
        ids = [e["id"] for e in info["region"]]
        yield call("keep", ids=ids[: max(len(ids) // 2, 1)])
        yield call("commit")
'''


def _plugin(root: Path) -> dict[str, str]:
    """A distribution `my_consolidator` with an entry point, installed by PYTHONPATH alone."""
    (root / "my_consolidator.py").write_text(MODULE)
    dist = root / "my_consolidator-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-consolidator\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[dreamer_gym.consolidators]\nmine = my_consolidator:Mine\n")
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(root)}


def test_every_builtin_is_known_and_builds() -> None:
    assert set(BUILTIN) <= set(consolidator_names())
    for name in BUILTIN:
        policy = make_consolidator(name)
        assert policy.name == name and callable(policy.actions)
    assert make_consolidator("random", seed=3).seed == 3


def test_unknown_name_lists_the_known_ones_and_how_to_register() -> None:
    with pytest.raises(ConfigError, match=r"unknown consolidator 'magic'; known: \[.*'keep-all'.*'random'.*\]; "
                                          r"register one with .*register_consolidator.*'dreamer_gym.consolidators'"):
        make_consolidator("magic")


def test_register_a_class_a_factory_or_a_reference() -> None:
    try:
        register_consolidator("half-random", lambda **kw: RandomConsolidator(max_calls=3, **kw))
        register_consolidator("keep-again", "dreamer_gym.consolidators.fixed:KeepAllConsolidator")
        assert make_consolidator("half-random", seed=1).max_calls == 3
        assert isinstance(make_consolidator("keep-again"), KeepAllConsolidator)
        assert {"half-random", "keep-again"} <= set(consolidator_names())
        with pytest.raises(ConfigError, match="already registered as 'keep-all'; pass replace=True"):
            register_consolidator("keep-all", RandomConsolidator)
        register_consolidator("keep-all", KeepAllConsolidator)  # the built-in itself: nothing changes
        register_consolidator("not-a-policy", dict)
        with pytest.raises(ConfigError, match=r"built a dict, which has no actions\(env, obs, info\)"):
            make_consolidator("not-a-policy")
        register_consolidator("broken", "no_such_module:Thing")
        with pytest.raises(ConfigError, match="'broken' points at 'no_such_module:Thing', which cannot be loaded"):
            make_consolidator("broken")
    finally:
        for name in ("half-random", "keep-again", "not-a-policy", "broken"):
            CONSOLIDATORS.unregister(name)


def test_an_entry_point_is_found_without_importing_it(tmp_path: Path) -> None:
    env = _plugin(tmp_path)
    code = ("from dreamer_gym.consolidators import consolidator_names, make_consolidator; import sys; "
            "assert 'my_consolidator' not in sys.modules; print('mine' in consolidator_names(), "
            "type(make_consolidator('mine')).__name__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "Mine"]


@pytest.mark.jvm
def test_the_cli_runs_a_consolidator_defined_outside_the_package(tmp_path: Path) -> None:
    env = _plugin(tmp_path)
    cli = Path(sys.executable).with_name("dreamer-gym")  # the installed console script
    proc = subprocess.run([str(cli), "consolidate", "--consolidator", "mine", "--families", "use-thermometer",
                           "--seeds", "0", "--eval-in-family", "1", "--eval-other", "0", "--quiet"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [row] = [line for line in proc.stdout.splitlines() if line.startswith("mine ")]
    cells = [c.strip() for c in row.split("|")]
    assert float(cells[6]) < float(cells[5])  # entries after < before: it kept half the region
