"""``train --algo NAME`` dispatches through the algorithm registry (a name registered at run time works), and the
modules that moved into :mod:`dreamer_gym.methods` keep their old import paths for one version, with a warning."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from dreamer_gym.errors import ConfigError
from dreamer_gym.training import ALGORITHMS, Algorithm, TrainOptions, get_algorithm, register_algorithm


@dataclass(frozen=True)
class CountConfig:
    start: int = 0
    steps: int = 1
    out: str = "count.txt"


def count(config: CountConfig, options: TrainOptions) -> int:
    Path(config.out).write_text(str(config.start + config.steps))
    return 3 if options.quiet else 0


def test_an_algorithm_registered_at_run_time_runs_from_the_cli(tmp_path: Path) -> None:
    from dreamer_gym.cli import main

    config = tmp_path / "count.yaml"
    config.write_text(yaml.safe_dump({"start": 40, "out": str(tmp_path / "count.txt")}))
    register_algorithm("count", Algorithm(name="count", summary="adds", run=count, config=CountConfig))
    try:
        assert "count" in ALGORITHMS.names()
        assert main(["train", "--algo", "count", "--config", str(config), "--steps", "2", "--quiet"]) == 3
        assert (tmp_path / "count.txt").read_text() == "42"  # the YAML's start, the flag's steps
    finally:
        ALGORITHMS.unregister("count")
    with pytest.raises(ConfigError, match=r"Expected `--algo` to be one of \['grpo', 'trl', 'oplevel', 'sb3'\]"):
        get_algorithm("count")


def test_the_built_ins_name_their_extras_and_options_without_importing_them() -> None:
    assert ALGORITHMS.names() == ("grpo", "trl", "oplevel", "sb3")  # the built-ins' declared order
    assert get_algorithm("sb3").needs == ("torch", "stable_baselines3", "sb3_contrib")
    assert get_algorithm("trl").config is None and get_algorithm("trl").options == ("check", "resume")
    with pytest.raises(ConfigError, match=r"--check, --resume are not for --algo oplevel \(it takes none of"):
        get_algorithm("oplevel").check_options(TrainOptions(Path("x.yaml"), check=True, resume=True))
    with pytest.raises(ConfigError, match="expected `options` within"):
        Algorithm(name="bad", summary="", run=count, options=("fast",))


@pytest.mark.parametrize("old, new, name", [
    ("dreamer_gym.envs.oplevel", "dreamer_gym.envs.ops", "plan_calls"),
    ("dreamer_gym.envs.oplevel", "dreamer_gym.methods.oplevel.wrapper", "OpLevelWrapper"),
    ("dreamer_gym.training.oplevel", "dreamer_gym.methods.oplevel.trainer", "OpLevelConfig"),
    ("dreamer_gym.training.sb3_oplevel", "dreamer_gym.methods.oplevel.sb3", "SB3Config"),
    ("dreamer_gym.consolidators.sb3_policy", "dreamer_gym.methods.oplevel.consolidator", "SB3OpLevelConsolidator"),
    ("dreamer_gym.training.config", "dreamer_gym.methods.grpo.config", "GRPOConfig"),
    ("dreamer_gym.consolidators.grpo", "dreamer_gym.methods.grpo.consolidator", "GRPOConsolidator"),
])
def test_an_old_path_still_works_and_warns(old: str, new: str, name: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new} \(issue 28\); import {name} from there"):
        value = getattr(importlib.import_module(old), name)
    assert value is getattr(importlib.import_module(new), name)
