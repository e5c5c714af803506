"""Attacks on the verified tier's sandbox: each test fails if the attack gets a score.

A submitter's consolidator runs in bubblewrap (dreamer_gym/leaderboard/sandbox.py), which shows it an allow-list
only: it may not import the simulator, read the pool files, another checkout of the project, or the board's
environment, reach the network, or take more memory, /tmp or processes than its limits; verify refuses to run
without the sandbox, or with one whose self-test finds a canary. The attacks run through the real relay
(run_sandboxed: the sandboxed child, the pipe, the real env and its reward service) on the smallest track the code
allows: one family, one bank, one region, one evaluation episode. An attack fails inside the sandbox before its
region is scored, so its run uses the in-process service (:data:`OUT_HERE`: the service is out here, not under
attack, and a process service would only add a start); the honest run, which scores, uses the process service as
verify does.
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard import Track, load_track
from dreamer_gym.leaderboard.sandbox import CANARY_VARIABLE, Sandbox, SandboxUnavailable, SandboxViolation
from dreamer_gym.leaderboard.sandbox_limits import Limits
from dreamer_gym.leaderboard.sandbox_paths import package_root
from dreamer_gym.leaderboard.verify import run_sandboxed, verify

FAMILY = "pick_and_place_simple"
OUT_HERE = {"service": "inprocess"}  # the reward service of an attack's run (module docstring)
CHECKOUT = Path(__file__).resolve().parents[2]  # this checkout: its results and suites, as another copy would be
ATTACKS = '''
import json, os, socket, threading, time
from pathlib import Path
from dreamer_gym.consolidators.fixed import DedupeConsolidator


class ImportsTheSimulator(DedupeConsolidator):
    """Start ScienceWorld itself and read the gold action sequences (verified above the oracle before the sandbox)."""

    def actions(self, env, obs, info):
        import scienceworld  # noqa: F401
        yield from super().actions(env, obs, info)


class ReadsThePool(DedupeConsolidator):
    """Open the pool file the env was built on (its TEST texts and TRAIN gold paths)."""

    def actions(self, env, obs, info):
        import dreamer_gym
        Path(dreamer_gym.__file__).parent.joinpath("data", "POOL").read_bytes()
        yield from super().actions(env, obs, info)


class ReadsTheProcedures(DedupeConsolidator):
    """Emit the suite adapter's reference procedures."""

    def actions(self, env, obs, info):
        from dreamer_gym.suites.scienceworld import PROCEDURES
        yield json.dumps({"tool": "emit", "kind": "procedure", "text": str(list(PROCEDURES)),
                          "provenance": [info["region"][0]["id"]]})
        yield from super().actions(env, obs, info)


class PhonesHome(DedupeConsolidator):
    """Fetch banks written elsewhere (or send the region out)."""

    def actions(self, env, obs, info):
        socket.create_connection(("1.1.1.1", 443), timeout=5).close()
        yield from super().actions(env, obs, info)


class ReadsElsewhere(DedupeConsolidator):
    """Read another checkout of the project on the machine (issue 38: its oracle.json was read at run time and
    verified at +0.2487): this checkout's oracle submission, and in a copy elsewhere the same, its suite module with
    the reference procedures (imported from its file) and package data. Whatever it can read, it emits."""

    PATHS = ("CHECKOUT/leaderboards/submissions/oracle.json", "ELSEWHERE/leaderboards/submissions/oracle.json",
             "ELSEWHERE/dreamer_gym/suites/scienceworld.py", "ELSEWHERE/DATA")

    def actions(self, env, obs, info):
        import importlib.util
        read, failed = [], []
        for path in self.PATHS:
            try:
                if path.endswith(".py"):
                    spec = importlib.util.spec_from_file_location("elsewhere", path)
                    spec.loader.exec_module(importlib.util.module_from_spec(spec))
                read.append(Path(path).read_bytes()[:200].decode("latin-1"))
            except OSError as exc:
                failed.append(f"{type(exc).__name__}: {exc}")
        if not read:
            raise FileNotFoundError(" | ".join(failed))
        for text in read:
            yield json.dumps({"tool": "emit", "kind": "procedure", "text": text,
                              "provenance": [info["region"][0]["id"]]})
        yield from super().actions(env, obs, info)


class ReadsPidOne(DedupeConsolidator):
    """Read what pid 1 and every process it can see hold (bubblewrap as pid 1 held the board's environment and
    its command line with every hidden path) and send it out in its error, the one channel it has."""

    def actions(self, env, obs, info):
        seen = []
        for proc in sorted(Path("/proc").glob("[0-9]*")):
            for name in ("environ", "cmdline"):
                try:
                    seen.append(f"{proc.name}/{name}=" + (proc / name).read_bytes().replace(b"\\0", b" ").decode())
                except OSError as exc:
                    seen.append(f"{proc.name}/{name}: {exc}")
        raise RuntimeError("SEEN " + " | ".join(seen))
        yield


class TriesEach(DedupeConsolidator):
    """Each attack above on what the child may read or reach, one after another in one sandboxed run (one sandbox
    start, not six: CI time): what stopped each, or that it got through (its first tool call)."""

    ATTACKS = ("ReadsPidOne", "ImportsTheSimulator", "ReadsThePool", "ReadsTheProcedures", "PhonesHome",
               "ReadsElsewhere")

    def actions(self, env, obs, info):
        said = []
        for name in self.ATTACKS:
            try:
                said.append(f"{name} GOT THROUGH: {next(globals()[name]().actions(env, obs, info))[:200]}")
            except Exception as exc:
                said.append(f"{name}: {type(exc).__name__}: {exc}")
        raise RuntimeError(" ## ".join(said))
        yield


class HogsMemory(DedupeConsolidator):
    """Grow one process's heap until something gives (issue 38: 3.2 GB resident, unchallenged)."""

    def actions(self, env, obs, info):
        held = []
        while True:
            held.append(bytearray(32 * 2**20))
        yield


class HogsMemoryInChildren(DedupeConsolidator):
    """Three processes, each under the per-process data limit, together over the memory limit."""

    def actions(self, env, obs, info):
        for _ in range(3):
            if os.fork() == 0:
                try:
                    held = b"\\x01" * (250 * 2**20)  # touched: resident, not just reserved
                    time.sleep(120)
                finally:
                    os._exit(0)  # a child never returns into the consolidator's code
        time.sleep(120)
        yield


class FillsTmp(DedupeConsolidator):
    """Write into the sandbox's /tmp, RAM-backed, until something gives (issue 38: 1 GB, unchallenged)."""

    def actions(self, env, obs, info):
        with open("/tmp/filler", "wb") as out:
            while True:
                out.write(bytes(8 * 2**20))
                out.flush()
        yield


class Stalls(DedupeConsolidator):
    """Hold the board's machine without end (the CLI had no --timeout; an hour by default)."""

    def actions(self, env, obs, info):
        time.sleep(600)
        yield from super().actions(env, obs, info)


class StartsThreads(DedupeConsolidator):
    """Start threads (tasks, like processes) without end."""

    def actions(self, env, obs, info):
        stop = threading.Event()
        while True:
            threading.Thread(target=stop.wait, daemon=True).start()
        yield
'''


def small_track() -> Track:
    """One region of a track whose env needs no JVM (ALFWorld-engine games), one evaluation episode."""
    data = {**load_track("alfworld-gen").__dict__, "name": "tiny-sandbox", "families": (FAMILY,), "banks": (0,),
            "eval_in_family": 1, "eval_other": 0}
    return Track(**data)


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[Path]:
    """Another checkout of the project on the same machine, outside /tmp (the sandbox's /tmp is its own), readable
    by any user (so only the allow-list keeps it out): its oracle submission, its suite module with the reference
    procedures, and a copy of package data."""
    folder = Path(tempfile.mkdtemp(prefix="dreamer-gym-elsewhere-", dir="/var/tmp"))
    for part in ("leaderboards/submissions/oracle.json", "dreamer_gym/suites/scienceworld.py"):
        (folder / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CHECKOUT / part, folder / part)
    data = next(p for p in sorted((package_root() / "data").glob("*.json.gz")))
    shutil.copy(data, folder / data.name)
    for path in (folder, *folder.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def code(tmp_path_factory: pytest.TempPathFactory, elsewhere: Path) -> Path:
    """The attacker's code in a folder of its own (under /tmp, bound back into the sandbox)."""
    folder = tmp_path_factory.mktemp("submitter")
    data = next(p.name for p in elsewhere.glob("*.json.gz"))
    text = textwrap.dedent(ATTACKS).replace("POOL", data).replace("ELSEWHERE", str(elsewhere))
    (folder / "attacks.py").write_text(text.replace("CHECKOUT", str(CHECKOUT)).replace("DATA", data))
    folder.chmod(0o755)  # the sandbox's own uid reads what any user may (pytest makes its folders 0700)
    return folder


def nothing_left_of(sandbox: Sandbox) -> list[int]:
    """The pids still running under the sandbox's own uid a moment after a run (none: the machine is usable)."""
    uid = sandbox.uid()
    if uid is None:
        return []
    deadline = time.monotonic() + 10
    while True:
        left = [int(p.name) for p in Path("/proc").glob("[0-9]*") if _uid_of(p) == uid]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def _uid_of(proc: Path) -> int | None:
    try:
        return next(int(line.split()[1]) for line in (proc / "status").read_text().splitlines()
                    if line.startswith("Uid:"))
    except (OSError, StopIteration, ValueError):
        return None


STOPPED_BY = {  # each attack of ``TriesEach``: what stopped it inside the sandbox
    "ImportsTheSimulator": "ImportError: scienceworld is hidden inside the verify sandbox",
    "ReadsThePool": "FileNotFoundError: .*No such file",
    "ReadsTheProcedures": "ImportError: dreamer_gym.suites.scienceworld.PROCEDURES is hidden",
    "PhonesHome": "OSError|gaierror|unreachable",
    "ReadsElsewhere": "FileNotFoundError: .*No such file.*oracle.json' \\| .*No such file.*oracle.json' \\| "
                      ".*No such file.*scienceworld.py' \\| .*No such file.*json.gz'",
}


def test_an_attack_inside_the_sandbox_is_a_failure_not_a_score(code: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every attack of :data:`STOPPED_BY` fails inside the sandbox, and so does the run; and pid 1 holds nothing of
    the board's: its environment (a planted variable) and bubblewrap's command line (its binds) are nowhere in what
    the child can read of /proc, where what it reads is its own command line."""
    token = secrets.token_hex(16)
    monkeypatch.setenv("BOARD_SECRET", token)
    monkeypatch.setenv("PATH", f"{os.environ['PATH']}{os.pathsep}/board-only-{token}")  # its PATH names its folders
    with pytest.raises(SandboxViolation, match="failed inside the verify sandbox: RuntimeError: ReadsPidOne") as caught:
        run_sandboxed(small_track(), "attacks:TriesEach", Sandbox(code=(code,)), kind="contender", **OUT_HERE)
    message = str(caught.value)
    said = dict(part.split(": ", 1) for part in message.split("RuntimeError: ", 1)[1].split(" ## "))
    assert list(said) == ["ReadsPidOne", *STOPPED_BY], list(said)  # "NAME GOT THROUGH" where an attack did
    for attack, stopped in STOPPED_BY.items():
        assert re.search(stopped, said[attack]), (attack, said[attack])
    seen = said["ReadsPidOne"]
    assert seen.startswith("RuntimeError: SEEN ")
    assert "1/cmdline=" in seen and "sandbox_child attacks:TriesEach" in seen  # pid 1 is the child itself
    assert token not in message and "BOARD_SECRET" not in message and "board-only" not in message
    assert "--ro-bind" not in seen and "bwrap" not in seen


@pytest.mark.parametrize(("attack", "limits", "said"), [
    ("HogsMemory", Limits(memory_mb=400), r"MemoryError.*data-segment limit is 400 MiB .*held [\d.]+ MiB of data"),
    ("HogsMemoryInChildren", Limits(memory_mb=600),  # each child ~400 MiB of data: under the limit, not together
     r"held \d+ MiB resident \(\d+ processes\), over the sandbox's memory limit of 600 MiB \(`--memory-mb`\)"),
    ("FillsTmp", Limits(tmp_mb=32), r"No space left on device.*/tmp is 32 MiB \(`--tmp-mb`\); it held 3[0-2][.\d]* MiB"),
])
def test_a_resource_hog_is_stopped_with_its_reason_and_leaves_nothing(code: Path, attack: str, limits: Limits,
                                                                      said: str) -> None:
    sandbox = Sandbox(code=(code,), limits=limits)
    with pytest.raises(SandboxViolation, match=said):
        run_sandboxed(small_track(), f"attacks:{attack}", sandbox, kind="contender", **OUT_HERE)
    assert nothing_left_of(sandbox) == []  # every process killed, so the tmpfs went with its namespace


def test_a_consolidator_past_its_time_is_stopped_and_leaves_nothing(code: Path) -> None:
    sandbox = Sandbox(code=(code,))
    with pytest.raises(SandboxViolation, match=r"ran past its time in the sandbox \(3 s, `--timeout`\) and was stopped"):
        run_sandboxed(small_track(), "attacks:Stalls", sandbox, kind="contender", timeout_s=3, **OUT_HERE)
    assert nothing_left_of(sandbox) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="the task cap needs a uid of the child's own: the board runs as root")
def test_a_thread_bomb_is_stopped_at_the_task_limit(code: Path) -> None:
    sandbox = Sandbox(code=(code,), limits=Limits(processes=64))
    with pytest.raises(SandboxViolation, match=r"can't start new thread.*task limit is 64 processes and threads"):
        run_sandboxed(small_track(), "attacks:StartsThreads", sandbox, kind="contender", **OUT_HERE)
    assert nothing_left_of(sandbox) == []


# ~3.5 s (issue 40: CI time); tests/leaderboard/test_verify.py::test_verify_runs_the_consolidator_in_its_sandbox_on_a_fresh_draw
# stays in CI: dedupe through the same sandbox and relay, with the process service, scored into a verified record
@pytest.mark.heavy
def test_an_honest_consolidator_runs_through_the_sandbox_and_scores(code: Path) -> None:
    data = run_sandboxed(small_track(), "dedupe", Sandbox(code=(code,)), kind="fixed")
    [block] = data["tracks"]
    [region] = block["regions"]
    assert region["family"] == FAMILY and region["emitted"]  # dedupe kept the region's entries, through the pipe
    assert region["claimed"]["reward"] == pytest.approx(block["claimed"]["score"])


def test_verify_refuses_without_its_sandbox(tmp_path: Path) -> None:
    track = Track(**{**load_track("scienceworld").__dict__, "name": "tiny-verify", "banks": (0,)})
    with pytest.raises(SandboxUnavailable, match=r"`no-such-bwrap` is not installed: run `make sandbox`.*never runs "
                                                 "unsandboxed"):
        verify(track, "dedupe", tmp_path, sandbox=Sandbox(binary="no-such-bwrap"))
    assert not (tmp_path / "pool.json.gz").exists()  # refused before any acquisition


def test_a_sandbox_that_does_not_hide_fails_its_self_test(tmp_path: Path) -> None:
    """A 'sandbox' that runs the command as is (no isolation) is caught by the self-test, not trusted."""
    fake = tmp_path / "fake-bwrap"
    fake.write_text(f"#!{sys.executable}\nimport os, sys\nargs = sys.argv[1:]\n"
                    "rest = args[len(args) - args[::-1].index('--'):]\nos.execvp(rest[0], rest)\n")
    fake.chmod(0o755)
    with pytest.raises(SandboxUnavailable, match="failed its self-test: .*readable"):
        Sandbox(binary=str(fake)).self_test()


class ShowsWhatItDidNotThinkOf(Sandbox):
    """A hide-list sandbox (issue 38) shows every folder its list forgot: here /var, where the canary lies."""

    def command(self, argv: list[str]) -> list[str]:
        cmd = super().command(argv)
        return [cmd[0], "--ro-bind", "/var", "/var", *cmd[1:]]


class KeepsBubblewrapAsPidOne(Sandbox):
    """No ``--as-pid-1`` and the child left root (no uid of its own): pid 1 is bubblewrap, holding the board's
    environment."""

    def uid(self) -> int | None:
        return None

    def command(self, argv: list[str]) -> list[str]:
        return [arg for arg in super().command(argv) if arg != "--as-pid-1"]


@pytest.mark.parametrize(("sandbox", "said"), [
    (ShowsWhatItDidNotThinkOf(), "a file outside the allow-list is readable: .*dreamer-gym-canary-"),
    (KeepsBubblewrapAsPidOne(), f"the board's environment is readable \\({CANARY_VARIABLE}"),
])
def test_a_self_test_that_finds_a_canary_refuses(sandbox: Sandbox, said: str) -> None:
    with pytest.raises(SandboxUnavailable, match=f"failed its self-test: {said}.*never runs a consolidator"):
        sandbox.self_test()


def test_a_code_folder_that_holds_the_checkout_is_refused() -> None:
    """Declaring the whole checkout as 'my code' would show its results, studies and git objects: refused, by name
    (the sandbox shows the installed package by itself)."""
    with pytest.raises(ConfigError, match="holds the dreamer_gym package .* declare the folder of the "
                                          "consolidator's own code"):
        Sandbox(code=(package_root().parent,)).self_test()


def test_the_cli_hands_its_limits_to_the_sandbox_and_refuses_a_bad_one() -> None:
    from dreamer_gym.cli import build_parser
    from dreamer_gym.leaderboard.sandbox_limits import limits_from_args

    argv = ["leaderboard", "verify", "--consolidator", "dedupe", "--track", "scienceworld"]
    args = build_parser().parse_args([*argv, "--memory-mb", "2048", "--tmp-mb", "64", "--timeout", "90"])
    assert limits_from_args(args) == Limits(memory_mb=2048, tmp_mb=64) and args.timeout == 90
    assert limits_from_args(build_parser().parse_args(argv)) == Limits()  # the defaults are the dataclass's
    with pytest.raises(ConfigError, match="Expected the sandbox limit `processes` to be a positive int, got 0"):
        Limits(processes=0)


def test_the_default_time_limit_is_sized_from_the_track() -> None:
    from dreamer_gym.leaderboard.verify import (
        TIMEOUT_PER_CALL_S,
        TIMEOUT_PER_EPISODE_S,
        TIMEOUT_START_S,
        default_timeout,
    )

    track = load_track("scienceworld")  # 160 regions, 40 tool calls, 20 + 4 episodes a region
    per_region = 40 * TIMEOUT_PER_CALL_S + 24 * TIMEOUT_PER_EPISODE_S
    assert default_timeout(track) == TIMEOUT_START_S + 160 * per_region
    assert default_timeout(small_track()) < default_timeout(track)


def test_a_declared_model_is_shown_at_its_path_and_one_only_its_owner_may_read_is_refused() -> None:
    """Model files are bound one by one, so the folder around them may be private (0700); the child, under a uid
    of its own, reads what any user may, and a file only its owner may read is refused with the fix."""
    import subprocess

    folder = Path(tempfile.mkdtemp(prefix="dreamer-gym-model-", dir="/var/tmp"))  # 0700
    try:
        weights = folder / "weights.bin"
        weights.write_bytes(b"weights")
        weights.chmod(0o644)
        sandbox = Sandbox(models=(folder,))
        done = subprocess.run(sandbox.command([sys.executable, "-c", f"print(open({str(weights)!r}).read())"]),
                              capture_output=True, text=True, timeout=120)
        assert done.stdout.strip() == "weights", done.stderr
        if sandbox.uid() is not None:
            weights.chmod(0o600)
            with pytest.raises(ConfigError, match=f"'{weights}' is not readable by the sandbox's own uid .*chmod -R "
                                                  f"o\\+rX {weights}"):
                Sandbox(models=(folder,)).command(["true"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
