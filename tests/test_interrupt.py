"""Ctrl-C as a terminal sends it: SIGINT to the whole process group of a running ``dreamer-gym`` command, while
its reward service and the ScienceWorld JVM are playing episodes. The command answers with one line and exit
code 130; no helper prints a traceback or the "restarting the simulator" warning of a crashed episode; nothing
it started is left running; nothing it writes is left half-written (dreamer_gym/interrupts.py)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dreamer_gym.interrupts import is_interrupt, write_text_atomic

START_TIMEOUT_S = 240  # a loaded 2-core machine starts the service and the JVM in ~5-10 s; generous margin
EPISODE_IN_FLIGHT_S = 1.5  # after the JVM appears: the first episode is being played
# enough work that no machine finishes it before the interrupt (3 seeds took ~10 s on a quiet machine: done before
# the signal, exit 0); the interrupt stops it, so more seeds cost the test nothing
LONG_RUN_SEEDS = [str(seed) for seed in range(40)]


def _interrupt_while_playing(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], dict[psutil.Process, str]]:
    """Start ``dreamer-gym ARGV`` in its own process group, wait until a JVM runs below it, SIGINT the group;
    returns the finished process and every descendant it was seen with (and its name then)."""
    # SIGINT at its default in the command, as a terminal's foreground job has it: an ignored SIGINT is inherited
    # across exec, and something earlier in a full pytest session leaves the test process ignoring it (alone, these
    # tests pass without this; in the full session the command then ran to its end, exit 0)
    proc = subprocess.Popen([sys.executable, "-m", "dreamer_gym.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "DREAMER_GYM_DEBUG": ""},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen: dict[psutil.Process, str] = {}
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                seen.update((c, _name(c)) for c in psutil.Process(proc.pid).children(recursive=True))
            except psutil.NoSuchProcess:
                break
            if "java" in seen.values():
                break
            time.sleep(0.1)
        assert proc.poll() is None, f"finished before it could be interrupted: {proc.communicate()}"
        assert "java" in seen.values(), "no JVM started within the timeout"
        time.sleep(EPISODE_IN_FLIGHT_S)
        seen.update((c, _name(c)) for c in psutil.Process(proc.pid).children(recursive=True))
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C: the whole foreground group
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), seen


def _name(p: psutil.Process) -> str:
    try:
        return p.name()
    except psutil.Error:
        return ""


def _assert_quiet_and_clean(proc: subprocess.CompletedProcess[str], command: str,
                            descendants: dict[psutil.Process, str]) -> None:
    """Exit 130, stderr the one line, and every process seen below the command gone (psutil knows a reused pid
    from the process it saw: ``is_running`` compares creation times)."""
    assert proc.returncode == 130, (proc.returncode, proc.stderr[-3000:])
    assert proc.stderr.strip().splitlines() == [f"dreamer-gym {command}: interrupted"], proc.stderr[-3000:]
    _, alive = psutil.wait_procs(list(descendants), timeout=30)
    alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"left running: {[(p.pid, descendants[p]) for p in alive]}"


@pytest.mark.jvm
def test_ctrl_c_in_consolidate_is_one_line_exit_130_and_leaves_nothing_running() -> None:
    """The default reward service (its own process, with the JVM below it): SIGINT reaches only the command."""
    proc, descendants = _interrupt_while_playing(["consolidate", "--consolidator", "keep-all,dedupe", "--families",
                                                  "use-thermometer", "--seeds", *LONG_RUN_SEEDS, "--quiet"])
    _assert_quiet_and_clean(proc, "consolidate", descendants)
    assert "python" in descendants.values()  # the reward service was running (and is gone)


@pytest.mark.jvm
def test_ctrl_c_in_evaluate_with_the_jvm_in_process_writes_no_partial_record(tmp_path: Path) -> None:
    """The in-process service: the JVM is in the command's own group, so py4j meets the interrupt itself (and
    re-raises it as an AttributeError, which is still an interrupt, not a crashed simulator). The record that
    ``--out`` names is never written, and no temporary file is left beside it."""
    out = tmp_path / "record.json"
    proc, descendants = _interrupt_while_playing(["evaluate", "--consolidator", "keep-all", "--families",
                                                  "use-thermometer", "--seeds", *LONG_RUN_SEEDS, "--service",
                                                  "inprocess", "--quiet", "--out", str(out)])
    _assert_quiet_and_clean(proc, "evaluate", descendants)
    assert "restarting" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_is_recognised_in_the_error_a_library_raises_instead() -> None:
    """py4j, interrupted mid-command, raises an AttributeError while handling the KeyboardInterrupt."""
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise AttributeError("'GatewayConnection' object has no attribute 'shutdown_socket'") from None
    except AttributeError as exc:
        disguised = exc
    assert is_interrupt(RuntimeError("suite error").with_traceback(None)) is False
    assert is_interrupt(disguised) is True  # `from None` hides it from tracebacks, not from __context__
    wrapped = RuntimeError("ScienceWorld could not load the task")
    wrapped.__cause__ = disguised
    assert is_interrupt(wrapped) is True


def test_a_result_file_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "record.json"
    write_text_atomic(path, '{"a": 1}')
    assert path.read_text() == '{"a": 1}'
    with pytest.raises(UnicodeEncodeError):  # fails mid-write: the old file stays, no temporary is left
        write_text_atomic(path, '{"a": "\ud800"}')
    assert path.read_text() == '{"a": 1}' and [p.name for p in path.parent.iterdir()] == ["record.json"]
