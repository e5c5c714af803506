"""The learned rule selector (``selector:PATH``): it reads the region's features, picks a rule by its frozen tree
and commits exactly what that rule commits; a bad file is refused naming what it lacks."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.consolidators import make_consolidator, run_episode
from dreamer_gym.consolidators.op_rule import make_rule
from dreamer_gym.consolidators.rule_selector import FEATURES, region_features
from dreamer_gym.errors import ConfigError

from helpers import make_env

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"


def stump(tmp_path: Path, threshold: float) -> str:
    """A selector: ``procedure_share <= threshold`` plays keep-all, else merge-all."""
    path = tmp_path / f"stump-{threshold}.json"
    path.write_text(json.dumps({"features": ["procedure_share"], "rules": ["keep-all", "rule:merge-all"],
                                "tree": {"feature": 0, "threshold": threshold, "left": {"label": 0},
                                         "right": {"label": 1}}}))
    return f"selector:{path}"


def test_it_picks_by_the_regions_features(pool, tmp_path: Path) -> None:
    region = [e.to_dict() for e in pool.banks[0] if e.family == pool.families[0]]
    share = region_features(region)["procedure_share"]
    assert set(region_features(region)) == set(FEATURES) and 0 < share < 1
    assert make_consolidator(stump(tmp_path, share)).choose(region) == "keep-all"
    assert make_consolidator(stump(tmp_path, share - 1e-6)).choose(region) == "rule:merge-all"


@pytest.fixture(scope="module")
def env() -> Iterator[gym.Env]:
    env = make_env(ENV_ID, eval_in_family=1, eval_other=0)
    yield env
    env.close()


@pytest.mark.jvm
def test_it_commits_what_its_chosen_rule_commits(env: gym.Env, tmp_path: Path) -> None:
    selector = make_consolidator(stump(tmp_path, 0.2))
    for seed in range(3):
        info = run_episode(env, selector, seed=seed)
        rule = run_episode(env, make_rule(selector.last_rule), seed=seed)
        assert (info["return"], info["size_after"]) == (rule["return"], rule["size_after"])
        assert info["invalid_calls"] == 0


def test_a_bad_selector_file_is_refused_naming_what_it_lacks(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="selector:PATH"):
        make_consolidator("selector")
    (tmp_path / "s.json").write_text(json.dumps({"features": ["colour"], "rules": ["keep-all"]}))
    with pytest.raises(ConfigError, match=r"missing \['tree'\], unknown features \['colour'\]"):
        make_consolidator(f"selector:{tmp_path / 's.json'}")
    with pytest.raises(ConfigError, match="cannot read"):
        make_consolidator(f"selector:{tmp_path / 'none.json'}")
