"""The command line, run as a real subprocess where a run is the point: LLM flags, the JSON record, and no API key
anywhere; flags and argument errors in this process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SECRET = "sk-test-DO-NOT-LEAK-0123456789"
SMALL = ["--families", "use-thermometer", "--eval-in-family", "1", "--eval-other", "0", "--quiet"]


def dreamer_gym(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dreamer_gym.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_unreachable_server_is_a_recorded_failure_and_the_key_never_leaks(tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    proc = dreamer_gym("-v", "evaluate", "--consolidator", "prompted", "--backend", "openai", "--model", "m",
                       "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "DG_TEST_KEY", "--timeout-s", "3", "--retries", "0",
                       "--out", str(out), *SMALL, env={"DG_TEST_KEY": SECRET}, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    record = json.loads(out.read_text())
    [run] = record["runs"]
    assert "LLMError" in run["error"] and "127.0.0.1:9" in run["error"]
    assert "failed: 1 x LLMError" in proc.stdout and "127.0.0.1:9" in proc.stdout  # the reason, under the table
    assert record["llm"]["api_key_env"] == "DG_TEST_KEY"
    for text in (proc.stdout, proc.stderr, out.read_text()):
        assert SECRET not in text


@pytest.mark.heavy  # ~23 s (issue 39: CI time); the LLM reward agent commits in CI in tests/envs/test_llm_env.py
@pytest.mark.jvm
def test_evaluate_with_the_llm_reward_agent_writes_a_record(tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    proc = dreamer_gym("evaluate", "--consolidator", "keep-all", "--reward-agent", "llm", "--agent-max-steps", "2",
                       "--out", str(out), *SMALL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "LLM agent (smollm2-135m)" in proc.stdout
    record = json.loads(out.read_text())
    assert record["reward_agent"] == "llm" and record["agent_llm"]["backend"] == "transformers"
    [run] = record["runs"]
    assert run["return"] == 0.0  # keep-all: the same bank before and after
    assert len(run["episodes"]) == 1 and 0.0 <= run["episodes"][0]["before"] <= 100.0


def test_unknown_consolidator_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    from dreamer_gym.cli import main  # in this process: the argument errors are tests/test_cli_errors.py's walk

    assert main(["evaluate", "--consolidator", "magic", *SMALL]) != 0
    assert "unknown consolidator 'magic'" in capsys.readouterr().err


@pytest.mark.jvm
@pytest.mark.alfworld
@pytest.mark.browser
def test_transfer_track_runs_every_suite_it_can_and_names_why_not_the_others(tmp_path: Path) -> None:
    """One consolidator set, unchanged, on ScienceWorld, ALFWorldGen and MiniWoB; the official ALFWorld
    and WebArena ids are listed with the reason they cannot run here."""
    from dreamer_gym.contract.ids import TRANSFER_TRACK

    out = tmp_path / "transfer.json"
    env = {"ALFWORLD_DATA": str(tmp_path / "no-alfworld")} | {k: "" for k in ("WA_SHOPPING", "WA_REDDIT")}
    proc = dreamer_gym("evaluate", "--track", "transfer", "--consolidator", "keep-all,oracle", "--seeds", "0",
                       "--eval-in-family", "1", "--eval-other", "0", "--max-families", "1", "--quiet", "--out", str(out),
                       env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads(out.read_text())
    settings = record["settings"]  # every env flag by its ConsolidationConfig name; None: each id's own value
    assert settings["eval_in_family"] == 1 and settings["eval_other"] == 0
    assert settings["max_region_entries"] is None and settings["max_tool_calls"] is None
    assert settings["max_families"] == 1 and settings["reward_agent"] == "memory"
    suites = record["suites"]
    ran = [i for i, s in suites.items() if "rows" in s]
    ids = {env_id.split("-")[1]: env_id for _, env_id in TRANSFER_TRACK}  # each suite's current version
    assert ran == [ids["ScienceWorld"], ids["ALFWorldGen"], ids["MiniWoB"]]
    for env_id in ran:
        keep, oracle = suites[env_id]["rows"]
        assert keep["consolidator"] == "keep-all" and keep["reward"] == "+0.000" and keep["compression"] == "1.0x"
        assert oracle["consolidator"] == "oracle" and float(oracle["entries after"]) < float(oracle["entries before"])
        assert env_id in proc.stdout
    assert "alfworld-download" in suites[ids["ALFWorld"]]["unavailable"]
    assert "WA_SHOPPING" in suites[ids["WebArena"]]["unavailable"]
    assert "not run here" in proc.stdout


# --- flags generated from the config dataclasses, and --config files -----------------------------------------
def test_env_and_llm_flags_are_generated_from_the_config_dataclasses() -> None:
    """Every ConsolidationConfig field an id does not freeze is a flag of its own name; every scalar LLMConfig
    field is a flag for both sides and, with --consolidator-/--agent-, for one side. Only given flags are sent."""
    import dataclasses

    from dreamer_gym.cli import parse_args
    from dreamer_gym.commands.flags import ENV_SKIP, env_kwargs, llm_config
    from dreamer_gym.cli_args import cli_fields
    from dreamer_gym.envs.config import ConsolidationConfig
    from dreamer_gym.llm.config import LLMConfig

    env_fields = {f.name for f, _, _ in cli_fields(ConsolidationConfig, ENV_SKIP)}
    assert env_fields == {f.name for f in dataclasses.fields(ConsolidationConfig)} - set(ENV_SKIP)
    args = parse_args(["consolidate"])
    assert {d[4:] for d in vars(args) if d.startswith("env.")} == env_fields
    assert env_kwargs(args) == {}  # nothing given: gym.make gets the registered id's values
    llm_fields = {f.name for f, _, _ in cli_fields(LLMConfig)}
    assert llm_fields == {f.name for f in dataclasses.fields(LLMConfig)} - {"engine_kwargs"}  # a tuple of pairs
    for prefix in ("llm.", "consolidator_llm.", "agent_llm."):
        assert {d[len(prefix):] for d in vars(args) if d.startswith(prefix)} == llm_fields

    args = parse_args(["evaluate", "--eval-in-family", "2", "--max-region-entries", "8", "--size-coef", "0.5",
                       "--reward-agent", "llm", "--model", "m", "--agent-backend", "vllm", "--timeout-s", "9"])
    kwargs = env_kwargs(args)
    assert {k: kwargs[k] for k in ("eval_in_family", "max_region_entries", "size_coef")} == {
        "eval_in_family": 2, "max_region_entries": 8, "size_coef": 0.5}
    assert kwargs["llm"] == LLMConfig(backend="vllm", model="m", timeout_s=9.0).to_dict()
    assert llm_config(args, "consolidator") == LLMConfig(model="m", timeout_s=9.0).to_dict()


def test_the_ray_executor_is_chosen_on_the_command_line() -> None:
    from dreamer_gym.cli import parse_args
    from dreamer_gym.commands.flags import env_kwargs
    from dreamer_gym.envs.config import ConsolidationConfig

    kwargs = env_kwargs(parse_args(["consolidate", "--executor", "ray", "--workers", "4",
                                     "--ray-address", "10.0.0.5:6379"]))
    assert kwargs == {"executor": "ray", "workers": 4, "ray_address": "10.0.0.5:6379"}
    assert ConsolidationConfig(**kwargs).executor_options() == {"address": "10.0.0.5:6379"}


def test_old_flag_names_still_parse_to_the_new_fields() -> None:
    from dreamer_gym.cli import parse_args
    from dreamer_gym.commands.flags import env_kwargs, llm_config

    args = parse_args(["consolidate", "--episodes", "1", "--other", "0", "--region-entries", "8", "--timeout", "3"])
    assert env_kwargs(args) == {"eval_in_family": 1, "eval_other": 0, "max_region_entries": 8}
    assert llm_config(args, "agent")["timeout_s"] == 3.0
    assert vars(parse_args(["validity", "--episodes", "2"]))["study.episodes_per_family"] == 2


def test_a_config_file_supplies_flag_values_and_the_command_line_wins(tmp_path: Path) -> None:
    from dreamer_gym.cli import parse_args
    from dreamer_gym.commands.flags import env_kwargs

    config = tmp_path / "run.yaml"
    config.write_text("consolidator: [keep-all, random]\nseeds: [0, 1]\neval_in_family: 2\n"
                      "max-tool-calls: 8\nmodel: m\nquiet: true\n")
    args = parse_args(["consolidate", "--config", str(config), "--eval-in-family", "1"])
    assert args.consolidator == "keep-all,random" and args.seeds == [0, 1] and args.quiet
    assert env_kwargs(args) == {"eval_in_family": 1, "max_tool_calls": 8}
    assert vars(args)["llm.model"] == "m"


@pytest.mark.parametrize("text, match", [
    ("eval_in_familly: 2\n", r"Unknown key 'eval_in_familly'.*known keys.*eval_in_family"),
    ("eval_in_family: two\n", r"Expected `eval_in_family` .* to be a int"),
    ("eval_in_family: 2.5\n", r"Expected `eval_in_family` .* to be a int"),
    ("backend: tensorflow\n", r"Expected `backend` .* one of \['transformers', 'vllm', 'openai'\]"),
    ("quiet: 1\n", r"Expected `quiet` .* true or false"),
    ("- a list\n", r"mapping of flag names to values"),
])
def test_a_bad_config_file_is_a_clear_error(tmp_path: Path, text: str, match: str) -> None:
    from dreamer_gym.cli import parse_args
    from dreamer_gym.errors import ConfigError

    config = tmp_path / "bad.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=match):
        parse_args(["consolidate", "--config", str(config)])


RECIPES = sorted((Path(__file__).parent.parent / "dreamer_gym" / "data" / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", RECIPES, ids=[p.name for p in RECIPES])
def test_every_shipped_recipe_is_read_by_the_command_its_first_line_names(path: Path) -> None:
    """dreamer_gym/data/configs/*.yaml start with the command that reads them (`# dreamer-gym CMD --config NAME`),
    and that command finds the recipe by its bare name, as from an installed wheel."""
    from dreamer_gym.cli import parse_args

    words = path.read_text().splitlines()[0].split()
    assert words[:2] == ["#", "dreamer-gym"] and words[3:5] == ["--config", path.stem]
    if words[2] == "train":  # train's flags come from its algorithm's config class, which needs that extra
        pytest.importorskip("torch")
    args = parse_args(words[2:])
    assert args.command == words[2]
    assert (args.train_config if words[2] == "train" else args.config) == path


def test_every_subcommand_help_renders() -> None:
    """``--help`` of each subcommand formats (a "%" in a dataclass field's help once broke ``validity -h``)."""
    import argparse

    from dreamer_gym.cli import build_parser

    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert {"acquire", "consolidate", "evaluate", "validity", "power"} <= set(sub.choices)
    for name, p in sub.choices.items():
        text = p.format_help()
        assert f"dreamer-gym {name}" in text and "--" in text, name
    assert "bank seed % banks" in sub.choices["validity"].format_help()


# --- help agrees with behaviour (issue 39 item 5) -----------------------------------------------------------------
def _help_defaults(parser_help: str) -> dict[str, str]:
    """``--flag ... (default: X[, from FILE])`` of a help text formatted unwrapped (COLUMNS set wide), by flag."""
    import re

    found, flag = {}, None
    for line in parser_help.splitlines():
        if line.startswith("  -"):
            flag = line.split()[0].rstrip(",")
        match = re.search(r"\(default: (.*?)(?:, from [^()]*)?\)$", line)
        if match and flag:
            found[flag] = match.group(1)
    return found


@pytest.mark.parametrize("argv", [["train", "--algo", "oplevel"], ["train", "--algo", "oplevel", "--config", "oplevel-cpu"],
                                  ["train", "--algo", "sb3"], ["train", "--algo", "sb3", "--config", "sb3-maskable-ppo-cpu"]],
                         ids=["oplevel", "oplevel-recipe", "sb3", "sb3-recipe"])
def test_train_help_prints_the_defaults_a_run_uses(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every scalar default ``train --help`` prints is the value of the config the run builds: the dataclass's
    without --config (which is optional: every field has a default), the recipe's with it (the SB3 recipe's output
    folder is ``runs/sb3-oplevel-seed0``, not the dataclass's ``runs/sb3-oplevel``)."""
    pytest.importorskip("sb3_contrib")
    from dreamer_gym.cli import build_parser, parse_args
    from dreamer_gym.cli_args import subparser
    from dreamer_gym.commands.train import train_config

    monkeypatch.setenv("COLUMNS", "2000")  # argparse wraps at the terminal's width: one line per flag
    from dreamer_gym.training.algorithms import ALGORITHMS

    shown = _help_defaults(subparser(build_parser(argv), "train").format_help())
    args = parse_args(argv)
    config = train_config(args, ALGORITHMS.get(args.algo).config_class())
    scalars = {f"--{k.replace('_', '-')}": v for k, v in vars(config).items() if isinstance(v, (str, int, float))}
    assert "--output-dir" in shown and set(scalars) <= set(shown), sorted(set(scalars) - set(shown))
    for flag, value in scalars.items():
        assert shown[flag] == str(value), (flag, shown[flag], value)
    if "sb3-maskable-ppo-cpu" in argv:
        assert config.output_dir == shown["--output-dir"] == "runs/sb3-oplevel-seed0"


def test_a_recipe_file_s_values_are_the_defaults_help_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    from dreamer_gym.cli import build_parser, parse_args
    from dreamer_gym.cli_args import apply_config_file, resolve_config, subparser

    monkeypatch.setenv("COLUMNS", "2000")
    parser = subparser(build_parser(), "validity")
    apply_config_file(parser, resolve_config("validity", "validity"))
    shown = _help_defaults(parser.format_help())
    args = parse_args(["validity", "--config", "validity"])
    assert shown["--env"] == args.env == "MemoryConsolidation-ScienceWorld-v0"
    assert shown["--seeds"] == "[0, 1, 2, 3, 4, 5]" and vars(args)["study.seeds"] == [0, 1, 2, 3, 4, 5]


def test_train_lists_and_takes_only_its_algorithm_s_recipes() -> None:
    pytest.importorskip("sb3_contrib")
    from dreamer_gym.cli import build_parser, parse_args
    from dreamer_gym.cli_args import subparser
    from dreamer_gym.errors import ConfigError

    text = " ".join(subparser(build_parser(["train", "--algo", "sb3"]), "train").format_help().split())
    assert "shipped recipe: sb3-maskable-ppo-cpu " in text and "oplevel-cpu" not in text and "fixed" not in text
    with pytest.raises(ConfigError, match=r"recipe 'oplevel-cpu' is for `dreamer-gym train --algo oplevel`.*"
                                          r"sb3-maskable-ppo-cpu$"):
        parse_args(["train", "--algo", "sb3", "--config", "oplevel-cpu"])
    with pytest.raises(ConfigError, match=r"recipe 'fixed' is for `dreamer-gym consolidate`"):
        parse_args(["train", "--algo", "sb3", "--config", "fixed"])
    with pytest.raises(ConfigError, match=r"train --algo trl needs --config.*grpo-trl-smollm2-cpu"):
        parse_args(["train", "--algo", "trl"])


def test_consolidate_and_evaluate_take_the_same_filter_flags() -> None:
    from dreamer_gym.cli import build_parser, parse_args
    from dreamer_gym.cli_args import subparser

    def group(command: str) -> set[str]:
        [g] = [g for g in subparser(build_parser(), command)._action_groups if g.title == "which episodes"]
        return {s for a in g._group_actions for s in a.option_strings}

    assert group("consolidate") == group("evaluate") == {"--families", "--max-families", "--seeds"}
    args = parse_args(["consolidate", "--families", "a,b,c", "--max-families", "2", "--seeds", "3", "4"])
    assert (args.families, args.max_families, args.seeds) == ("a,b,c", 2, [3, 4])


@pytest.mark.parametrize("argv, needles", [
    (["consolidate", "--seeds", "a"], ["--seeds: invalid int value: 'a'", "`dreamer-gym consolidate --help`"]),
    (["train", "--algo", "sb4"], ["--algo", "did you mean 'sb3'", "`dreamer-gym train --help`"]),
    (["evaluate", "--max-families", "x"], ["--max-families: invalid int value"]),
    (["leaderboard", "submit", "--consolidator", "keep-all"], ["required: --track",
                                                               "`dreamer-gym leaderboard submit --help`"]),
    (["power", "--track", "/nonexistent/mine.yaml"], ["no track file /nonexistent/mine.yaml"]),
])
def test_argument_errors_are_one_line_with_a_hint_and_no_usage(argv: list[str], needles: list[str],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from dreamer_gym.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    [line] = err.splitlines()
    assert "usage:" not in err and line.startswith(f"dreamer-gym {argv[0]}"), err
    for needle in needles:
        assert needle in line, (needle, line)


def test_power_and_learnability_take_a_track_file(tmp_path: Path) -> None:
    """``--track`` takes a track's YAML file as well as a name: the file is checked and known by its own name."""
    import yaml

    from dreamer_gym.cli import parse_args
    from dreamer_gym.errors import ConfigError
    from dreamer_gym.leaderboard.tracks import load_track, tracks_dir

    data = yaml.safe_load((tracks_dir() / "scienceworld.yaml").read_text())
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({**data, "name": "cli-test-mine", "banks": data["banks"][:2]}))
    assert parse_args(["power", "--track", "scienceworld", str(mine)]).track == ["scienceworld", "cli-test-mine"]
    assert parse_args(["learnability", "--track", str(mine)]).track == "cli-test-mine"
    assert load_track("cli-test-mine").banks == tuple(data["banks"][:2])
    clash = tmp_path / "clash.yaml"
    clash.write_text(yaml.safe_dump({**data, "banks": data["banks"][:2]}))
    with pytest.raises(ConfigError, match=r"named 'scienceworld', as a known track with other contents"):
        parse_args(["power", "--track", str(clash)])
