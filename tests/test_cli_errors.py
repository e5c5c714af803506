"""Errors, not tracebacks, at every door: each subcommand with a bad argument exits 2 with one line naming the
problem, a missing optional extra is named with its install command (the module really blocked, in a process that
never imported it), and every table that counts failures says why under it.

The bad-argument walk calls the CLI's ``main`` in this process (what a subprocess adds is the interpreter's start);
the blocked-module cases each run in a fresh fork of one process that imported only ``dreamer_gym.cli`` (with every
module any case blocks refused), so no case sees a module an earlier case or test imported; one test runs the
installed ``dreamer-gym`` console script itself."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium
import pytest
import yaml

from dreamer_gym.cli import main
from dreamer_gym.evaluation.failures import failure_summary

MISSING = "/nonexistent/dreamer-gym"
TYPO = "MemoryConsolidation-ScienceWorl-v0"
# a meta-path finder that refuses the named top-level modules, as if they were not installed
BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = set(sys.argv.pop(1).split(","))
    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None
    sys.meta_path.insert(0, Blocker())
""")
# the blocker, then the CLI imported (its parser built once) with every case's modules refused; each case (JSON on
# stdin: blocked modules, argv) runs as `sys.exit(main(argv))` would, in a fork of that process with only its own
# modules refused and its stdout and stderr in files; the process prints the cases' [returncode, stdout, stderr]
FORKED_CLI = BLOCKER + textwrap.dedent("""
    import json, os, tempfile, traceback
    cases = json.load(sys.stdin)
    from dreamer_gym.cli import build_parser, main
    build_parser()  # the commands' modules, imported once (each case builds its parser anew)
    results = []
    for blocked, argv in cases:
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        sys.stdout.flush(); sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            BLOCKED.clear(); BLOCKED.update(filter(None, blocked.split(",")))
            os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
            try:
                code = main(argv)
            except SystemExit as exc:  # as the interpreter exits on it: an int is the status, anything else printed
                code = exc.code
                if code is not None and not isinstance(code, int):
                    print(code, file=sys.stderr)
                    code = 1
            except BaseException:  # as the interpreter: the traceback, exit status 1
                traceback.print_exc()
                code = 1
            sys.stdout.flush(); sys.stderr.flush()
            os._exit(code or 0)
        _, status = os.waitpid(pid, 0)
        texts = []
        for f in (out, err):
            f.seek(0); texts.append(f.read().decode())
        results.append([os.waitstatus_to_exitcode(status), *texts])
    json.dump(results, sys.__stdout__)
""")


def forked_cli(cases: list[tuple[str, list[str]]]) -> list[subprocess.CompletedProcess[str]]:
    """Each ``(blocked, argv)``: the real CLI with the modules in ``blocked`` (comma-separated) refused, run in a
    fresh fork of one process that imported the CLI with every case's blocked modules refused."""
    every = ",".join(sorted({m for blocked, _ in cases for m in blocked.split(",") if m}))
    proc = subprocess.run([sys.executable, "-c", FORKED_CLI, every], input=json.dumps(cases), capture_output=True,
                          text=True, timeout=600, env={**os.environ, "DREAMER_GYM_DEBUG": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [subprocess.CompletedProcess(argv, code, out, err)
            for (_, argv), (code, out, err) in zip(cases, json.loads(proc.stdout))]


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> subprocess.CompletedProcess[str]:
    """The CLI's ``main`` in this process: its exit status (a ``SystemExit``'s code too), stdout and stderr."""
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


def assert_one_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit code 2, no traceback, no usage dump: stderr is exactly one error line, which holds every needle;
    returns that line."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr and "usage:" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "error:" in errors[0], proc.stderr[-3000:]
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]


# every subcommand (and leaderboard sub-subcommand) with a bad argument: (argv, what the one line must say)
BAD_ARGUMENTS = [
    (["acquire", "--suite", "no-such-suite", "--out", f"{MISSING}/pool.json.gz"], ["Expected `suite`", "scienceworld"]),
    (["consolidate", "--env", TYPO], ["Did you mean: `MemoryConsolidation-ScienceWorld`"]),
    (["consolidate", "--consolidator", "keep-all,magic"], ["unknown consolidator 'magic'", "keep-all"]),
    (["consolidate", "--config", "no-such-recipe"], ["no shipped recipe 'no-such-recipe'", "consolidate`'s recipes: fixed"]),
    (["consolidate", "--seeds", "a"], ["argument --seeds: invalid int value: 'a'", "`dreamer-gym consolidate --help`"]),
    (["evaluate", "--env", "NoSuchEnv-v0"], ["`NoSuchEnv` doesn't exist", "MemoryConsolidation-ScienceWorld-v0"]),
    (["evaluate", "--config", f"{MISSING}/run.yaml"], [f"config file {MISSING}/run.yaml does not exist"]),
    (["evaluate", "--consolidator", "keep-all,oracle"], ["evaluate takes one consolidator"]),
    (["evaluate", "--env", "MemoryConsolidation-ALFWorld-v0", "--reward-agent", "llm"], ["has no LLM-agent variant"]),
    (["evaluate", "--eval-in-family", "many"], ["--eval-in-family: invalid int value: 'many'"]),
    (["validity", "--env", TYPO], ["Did you mean"]),
    (["validity", "--config", "fixed"], ["recipe 'fixed' is for `dreamer-gym consolidate`"]),  # another command's
    (["power", "--env", "NoSuchEnv-v0"], ["`NoSuchEnv` doesn't exist"]),
    (["learnability", "--rules", "keep-all", "magic"], ["Unknown rule(s) ['magic'] in `rules`", "merge-all"]),
    (["train", "--config", "no-such-recipe"], ["no shipped recipe 'no-such-recipe'", "grpo-smollm2-cpu"]),
    (["train", "--algo", "oplevel", "--config", "oplevel-cpu", "--group-size", "two"], ["invalid int value: 'two'"]),
    (["train", "--algo", "sb3", "--config", "sb3-maskable-ppo-cpu", "--probe", "2"], ["--probe"]),
    (["serve", TYPO], ["Did you mean"]),
    (["serve", "MemoryConsolidation-ScienceWorld-v0", "--max-sessions", "0"], ["Expected `max_sessions`"]),
    (["serve", "MemoryConsolidation-ScienceWorld-v0", "--env-kwargs", "[1]"], ["expected a JSON object"]),
    (["leaderboard", "submit", "--consolidator", "magic", "--track", "scienceworld"], ["unknown consolidator 'magic'"]),
    (["leaderboard", "submit", "--consolidator", "keep-all", "--track", "no-such-track"], ["no track 'no-such-track'"]),
    (["leaderboard", "validate", f"{MISSING}/submission.json"], ["no submission file"]),
    (["leaderboard", "verify", "--consolidator", "keep-all", "--track", "no-such-track"], ["no track"]),
    (["leaderboard", "render", "--results", MISSING], ["no results folder"]),
    (["leaderboard", "columns", "--results", MISSING], ["no results folder"]),
    (["no-such-command"], ["invalid choice: 'no-such-command'"]),
]


@pytest.mark.parametrize("argv, needles", BAD_ARGUMENTS, ids=[" ".join(a[:2]) for a, _ in BAD_ARGUMENTS])
def test_every_subcommand_answers_a_bad_argument_with_one_line_and_exit_2(argv: list[str], needles: list[str],
                                                                          capsys: pytest.CaptureFixture[str],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DREAMER_GYM_DEBUG", raising=False)
    assert_one_error(cli(*argv, capsys=capsys), *needles)


def test_the_walk_covers_every_subcommand() -> None:
    import argparse

    from dreamer_gym.cli import build_parser

    [sub] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    [board] = [a for a in sub.choices["leaderboard"]._actions if isinstance(a, argparse._SubParsersAction)]
    walked = {tuple(argv[:2]) if argv[0] == "leaderboard" else argv[0] for argv, _ in BAD_ARGUMENTS}
    assert set(sub.choices) - {"leaderboard"} <= walked
    assert {("leaderboard", name) for name in board.choices} <= walked


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--debug`` (anywhere) or ``DREAMER_GYM_DEBUG=1``: ``main`` lets the error out, and the interpreter prints
    its traceback."""
    for argv, debug in ((["consolidate", "--env", TYPO, "--debug"], ""), (["consolidate", "--env", TYPO], "1")):
        monkeypatch.setenv("DREAMER_GYM_DEBUG", debug)
        with pytest.raises(gymnasium.error.NameNotFound, match="Did you mean"):
            main(argv)


# --- a missing extra is named, with its install command, before any work starts -----------------------------------
MISSING_EXTRAS = [
    ("uvicorn", ["serve", "MemoryConsolidation-ScienceWorld-v0"],
     ["needs uvicorn (the [openenv] extra)", "pip install --no-deps openenv-core==0.3.0"]),
    ("openenv,uvicorn", ["serve", "MemoryConsolidation-ScienceWorld-v0"], ["openenv, uvicorn", "[openenv]"]),
    ("torch", ["train", "--algo", "oplevel", "--config", "oplevel-cpu"],
     ["train --algo oplevel needs torch (the [llm] extra)", 'pip install "dreamer-gym[llm]"']),
    ("torch", ["train", "--config", "grpo-smollm2-cpu"], ["train --algo grpo needs torch", "[llm]"]),
    ("sb3_contrib", ["train", "--algo", "sb3", "--config", "sb3-maskable-ppo-cpu"],
     ["needs sb3_contrib (the [sb3] extra)", 'pip install "dreamer-gym[sb3]"']),
    ("trl", ["train", "--algo", "trl", "--config", "grpo-trl-smollm2-cpu", "--check"], ["needs trl", "[llm]"]),
    ("ray", ["consolidate", "--executor", "ray", "--consolidator", "keep-all"],
     ["--executor ray needs ray (the [ray] extra)", 'pip install "dreamer-gym[ray]"']),
    ("torch", ["evaluate", "--consolidator", "prompted"], ["the prompted consolidator on the transformers backend",
                                                          "[llm]"]),
]
NO_TRAINING_EXTRA = "torch,transformers,trl,peft,stable_baselines3,sb3_contrib"
HELP_WITHOUT_TRAINING = [["--help"], ["consolidate", "--help"], ["evaluate", "--help"]]


@pytest.fixture(scope="module")
def blocked_runs() -> dict[tuple[str, tuple[str, ...]], subprocess.CompletedProcess[str]]:
    """Every blocked-module case of this module, run at once: ``(blocked, argv)`` -> its run."""
    cases = [(blocked, argv) for blocked, argv, _ in MISSING_EXTRAS]
    cases += [(NO_TRAINING_EXTRA, argv) for argv in HELP_WITHOUT_TRAINING]
    return {(blocked, tuple(argv)): proc for (blocked, argv), proc in zip(cases, forked_cli(cases))}


@pytest.mark.parametrize("blocked, argv, needles", MISSING_EXTRAS, ids=[
    "serve-uvicorn", "serve-openenv", "train-oplevel", "train-grpo", "train-sb3", "train-trl", "ray", "prompted"])
def test_a_missing_extra_is_named_with_its_install_command(blocked: str, argv: list[str], needles: list[str],
                                                           blocked_runs: dict) -> None:
    assert_one_error(blocked_runs[(blocked, tuple(argv))], *needles)


def test_commands_other_than_train_need_no_training_extra(blocked_runs: dict) -> None:
    """``train``'s flags come from its algorithm's config class (which imports torch): only a ``train`` command
    line builds them, so the other commands and ``--help`` work without torch."""
    for argv in HELP_WITHOUT_TRAINING:
        proc = blocked_runs[(NO_TRAINING_EXTRA, tuple(argv))]
        assert proc.returncode == 0 and "usage: dreamer-gym" in proc.stdout, (argv, proc.stderr[-2000:])


def test_the_parallel_env_without_pettingzoo_names_its_extra() -> None:
    """The parallel env is a library door (no subcommand): its ImportError maps to the extra's install line."""
    code = BLOCKER + textwrap.dedent("""
        from dreamer_gym.cli_errors import error_message
        try:
            import dreamer_gym.envs.parallel
        except ImportError as exc:
            print(error_message(exc))
    """)
    proc = subprocess.run([sys.executable, "-c", code, "pettingzoo"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "[pettingzoo]" in proc.stdout and "pip install" in proc.stdout, proc.stderr


# --- failure reasons under the tables ---------------------------------------------------------------------------
def test_failures_are_listed_once_per_reason_with_their_count() -> None:
    from dreamer_gym.commands.consolidate import failure_lines, reasons
    from dreamer_gym.errors import EvaluationFailed, LLMTimeout

    timeout = LLMTimeout("generation took 135.9 s against timeout_s=120")
    failed = EvaluationFailed("2 of 4 episodes did not run", errors=("SuiteError: the JVM died",))
    results = {"prompted": [{"error": f"{type(e).__name__}: {e}", "reasons": reasons(e)}
                            for e in (timeout, timeout, failed)] + [{"return": 0.1}]}
    assert failure_lines(results).splitlines() == [
        "failed: 2 x LLMTimeout: generation took 135.9 s against timeout_s=120",
        "failed: 1 x SuiteError: the JVM died",
    ]
    results["keep-all"] = [{"return": 0.0}]  # several rows: each reason says whose
    assert failure_lines(results).splitlines()[0].endswith("(prompted)")
    assert failure_summary([]) == "" and failure_summary(["a\n  b"], indent="  ") == "  failed: 1 x a b"


# --- shipped recipes, --help, --version ---------------------------------------------------------------------------
def test_a_recipe_is_found_by_name_and_a_path_still_works(tmp_path: Path) -> None:
    from dreamer_gym.cli_args import recipe_names, recipes_dir, resolve_config
    from dreamer_gym.errors import ConfigError

    assert {"fixed", "oplevel-cpu", "grpo-smollm2-cpu", "validity"} <= set(recipe_names())
    assert resolve_config("oplevel-cpu") == recipes_dir() / "oplevel-cpu.yaml"
    own = tmp_path / "mine.yaml"
    own.write_text("seeds: [3]\n")
    assert resolve_config(str(own)) == own
    with pytest.raises(ConfigError, match=r"no shipped recipe 'oplevel-gpu'.*oplevel-cpu"):
        resolve_config("oplevel-gpu")
    with pytest.raises(ConfigError, match=r"config file .*missing.yaml does not exist.*fixed"):
        resolve_config(tmp_path / "missing.yaml")


def test_the_installed_command_lists_every_subcommand_in_its_help() -> None:
    """The console script itself (the entry point pip installs), in a subprocess of its own."""
    import argparse

    from dreamer_gym.cli import build_parser

    script = Path(sys.executable).with_name("dreamer-gym")
    assert script.is_file(), f"{script}: the package is not installed in this interpreter's environment"
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "DREAMER_GYM_DEBUG": ""})
    assert proc.returncode == 0 and proc.stdout.startswith("usage: dreamer-gym"), proc.stderr[-3000:]
    [sub] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    for choice in sub._choices_actions:  # each subcommand, one line with its help
        assert choice.help and f"{choice.dest}  " in proc.stdout, choice.dest


def test_version_prints_and_every_common_flag_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    proc = cli("--version", capsys=capsys)
    assert proc.returncode == 0 and proc.stdout.startswith("dreamer-gym ")
    proc = cli("consolidate", "--help", capsys=capsys)
    assert proc.returncode == 0
    for flag in ("--env ", "--seeds ", "--consolidator "):
        line = next(line for line in proc.stdout.splitlines() if line.strip().startswith(flag.strip()))
        assert len(line.split()) > 2 or "registered" in proc.stdout, f"{flag} has no help"


def test_consolidators_is_a_deprecated_alias_of_consolidator() -> None:
    from dreamer_gym.cli import build_parser, parse_args

    assert parse_args(["consolidate", "--consolidators", "keep-all,random"]).consolidator == "keep-all,random"
    assert "--consolidators" not in build_parser().format_help()


# --- train: the config's fields as flags ----------------------------------------------------------------------
def test_train_flags_override_the_recipe() -> None:
    pytest.importorskip("torch")
    from dreamer_gym.cli import parse_args
    from dreamer_gym.commands.train import train_config
    from dreamer_gym.methods.oplevel.config import OpLevelConfig

    args = parse_args(["train", "--algo", "oplevel", "--config", "oplevel-cpu", "--group-size", "2",
                       "--region-seeds", "0", "1", "--env-overrides", '{"eval_in_family": 1}'])
    config = train_config(args, OpLevelConfig)
    recipe = OpLevelConfig.load(args.train_config)
    assert (config.group_size, config.region_seeds, config.env_overrides) == (2, (0, 1), {"eval_in_family": 1})
    assert config.steps == recipe.steps == 12 and config.hidden == recipe.hidden  # the rest is the recipe's


@pytest.mark.jvm
def test_train_oplevel_runs_from_a_shipped_recipe_made_small_by_flags(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "run"
    proc = cli("train", "--algo", "oplevel", "--config", "oplevel-cpu", "--steps", "1", "--regions-per-step",
                       "1", "--group-size", "2", "--region-seeds", "0", "--env-overrides",
                       json.dumps({"eval_in_family": 1, "eval_other": 0}), "--output-dir", str(out), "--quiet",
                       capsys=capsys)
    assert proc.returncode == 0, proc.stderr[-3000:]
    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert (saved["steps"], saved["group_size"], saved["region_seeds"]) == (1, 2, [0])
    assert saved["hidden"] == 64 and saved["env_id"] == "MemoryConsolidation-ScienceWorld-v1"  # from the recipe
    assert (out / "checkpoint-1").is_dir() and "step 1: reward" in proc.stdout
