"""What a sandboxed consolidator may use: memory, ``/tmp``, processes (wall time is verify's ``timeout_s``).

The verify sandbox (:mod:`dreamer_gym.leaderboard.sandbox`) bounds each resource where the kernel can:

* **memory**: each process's data segment (``RLIMIT_DATA``: heap and private writable mappings; an
  address-space limit, ``RLIMIT_AS``, would break torch, which reserves far more address space than it
  touches) and, board-side, a :class:`Watchdog` on the resident memory of the whole process tree (bubblewrap's
  host pid and every descendant, read from ``/proc``), so several processes each under the data limit are
  stopped too;
* **/tmp**: the sandbox's ``/tmp`` is a tmpfs of ``tmp_mb`` (bubblewrap's ``--size``);
* **processes**: ``RLIMIT_NPROC`` (threads count), which the kernel counts per real uid; so where the board runs
  as root the child drops to a uid of its own (:func:`free_uid`), and the cap counts only its processes. Run
  as another user the child keeps that user's uid, whose other processes the cap would count: not enforced.

A breach is a :class:`~dreamer_gym.leaderboard.sandbox.SandboxViolation` naming the limit and what was measured
(:func:`explain`), never a score; the board kills the tree, and the tmpfs goes with its mount namespace.
"""
from __future__ import annotations

import os
import secrets
import signal
import threading
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from dreamer_gym.errors import ConfigError

# The bundled 135M prompted consolidator peaked at 1,349-1,397 MiB resident in the sandbox, its data segment at
# 1.3-1.5 GiB (docs/leaderboard.md, "The sandbox"): 4 GiB is 2.9x that, room for a somewhat larger local model.
DEFAULT_MEMORY_MB = 4096
# A converted 135M model is 517 MB; a consolidator that converts it into /tmp (no readable converted copy in the
# cache) still fits. /tmp is RAM, so this adds to the memory limit.
DEFAULT_TMP_MB = 1024
# Tasks of the sandbox's uid, threads included (torch starts one per core, tokenizers its own pool).
DEFAULT_PROCESSES = 512
# Where a sandbox uid is drawn from: far above the uids a distribution hands out (and below 2**31).
UID_LOW, UID_SPAN = 1_600_000_000, 100_000_000
_MB = 2**20


@dataclass(frozen=True)
class Limits:
    """The sandbox's resource limits (CLI: ``leaderboard verify --memory-mb --tmp-mb --processes``)."""

    memory_mb: int = field(default=DEFAULT_MEMORY_MB, metadata={
        "help": "resident memory of the consolidator's process tree, and each process's data segment, in MiB"})
    tmp_mb: int = field(default=DEFAULT_TMP_MB, metadata={"help": "size of the sandbox's /tmp (a tmpfs) in MiB"})
    processes: int = field(default=DEFAULT_PROCESSES, metadata={
        "help": "tasks (processes and threads) of the sandbox's own uid; enforced where the board runs as root"})

    def __post_init__(self) -> None:
        for name in ("memory_mb", "tmp_mb", "processes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"Expected the sandbox limit `{name}` to be a positive int, got {value!r}")


def free_uid() -> int:
    """A uid no running process has, for the sandboxed child alone (so ``RLIMIT_NPROC`` counts its tasks only)."""
    taken = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            taken.update(int(v) for line in status.read_text().splitlines() if line.startswith("Uid:")
                         for v in line.split()[1:])
        except (OSError, ValueError):
            continue
    while (uid := UID_LOW + secrets.randbelow(UID_SPAN)) in taken:
        continue
    return uid


def drops_privileges() -> bool:
    """Whether the child runs under a uid of its own: only root can hand it one."""
    return os.geteuid() == 0


def launcher(limits: Limits, uid: int | None) -> list[str]:
    """The commands that start the child inside the sandbox: ``prlimit`` sets the data segment (and, with a
    ``uid``, the task count) limit, then ``setpriv`` drops to ``uid`` with no capabilities left to regain."""
    cmd = ["prlimit", f"--data={limits.memory_mb * _MB}"]
    if uid is None:
        return [*cmd, "--"]
    return [*cmd, f"--nproc={limits.processes}", "--", "setpriv", f"--reuid={uid}", f"--regid={uid}",
            "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"]


def _stat(pid: str) -> tuple[int, int] | None:
    """``(ppid, resident bytes)`` of a process, ``None`` once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return int(stat.rsplit(")", 1)[1].split()[1]), pages * os.sysconf("SC_PAGE_SIZE")


def tree(root: int) -> dict[int, int]:
    """``{pid: resident bytes}`` of ``root`` and all its descendants (orphans inside the sandbox's pid namespace
    are re-parented to its pid 1, the child: still in the tree)."""
    procs = {int(p.name): s for p in Path("/proc").iterdir() if p.name.isdigit() and (s := _stat(p.name))}
    found, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        if pid in procs and pid not in found:
            found[pid] = procs[pid][1]
            frontier += [child for child, (ppid, _) in procs.items() if ppid == pid]
    return found


def kill_tree(root: int) -> None:
    """SIGKILL ``root``'s descendants, then ``root`` (bubblewrap's ``--die-with-parent`` backs this up)."""
    for pid in sorted(tree(root), key=lambda p: p == root):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class Watchdog:
    """Polls the resident memory of a process tree; over ``limit_mb`` it kills the tree and keeps the reason
    in :attr:`breach`. :attr:`peak_mb` is the most it saw (reported, and how the default was sized)."""

    def __init__(self, root: int, limit_mb: int, every_s: float = 0.2) -> None:
        self.root, self.limit_mb, self.every_s = root, limit_mb, every_s
        self.peak_mb = 0.0
        self.breach = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sandbox-watchdog", daemon=True)

    def __enter__(self) -> Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> float:
        """One reading: the tree's resident MiB now (and the peak updated)."""
        procs = tree(self.root)
        now = sum(procs.values()) / _MB
        self.peak_mb = max(self.peak_mb, now)
        if now > self.limit_mb and not self.breach:
            self.breach = (f"the consolidator's processes held {now:.0f} MiB resident ({len(procs)} processes), over "
                           f"the sandbox's memory limit of {self.limit_mb} MiB (`--memory-mb`): stopped")
            kill_tree(self.root)
        return now

    def _run(self) -> None:
        while not self._stop.is_set() and Path(f"/proc/{self.root}").exists():
            self.sample()
            self._stop.wait(self.every_s)


def explain(error: str, usage: dict[str, Any], limits: Limits) -> str:
    """The limit a child's error hit, with what was measured (``""`` where the error is no limit's)."""
    if "MemoryError" in error or "Cannot allocate memory" in error or "bad_alloc" in error:
        return (f"the sandbox's data-segment limit is {limits.memory_mb} MiB a process (`--memory-mb`); the process "
                f"held {usage.get('data_mb', '?')} MiB of data, peak resident {usage.get('peak_mb', '?')} MiB")
    if "No space left on device" in error or "Errno 28" in error:
        return (f"the sandbox's /tmp is {limits.tmp_mb} MiB (`--tmp-mb`); it held {usage.get('tmp_mb', '?')} MiB")
    tasks = usage.get("tasks", 0)
    if "can't start new thread" in error or ("Resource temporarily unavailable" in error
                                             and tasks >= 0.9 * limits.processes):  # EAGAIN has other causes
        return (f"the sandbox's task limit is {limits.processes} processes and threads (`--processes`); "
                f"{tasks or '?'} were running")
    return ""


def add_limit_flags(parser: Any) -> None:
    """``--memory-mb``, ``--tmp-mb`` and ``--processes`` on a CLI parser, from :class:`Limits`'s fields (one
    source for the names, defaults and help)."""
    for spec in fields(Limits):
        parser.add_argument(f"--{spec.name.replace('_', '-')}", type=int, default=spec.default, dest=spec.name,
                            help=f"{spec.metadata['help']} (default: %(default)s)")


def limits_from_args(args: Any) -> Limits:
    return Limits(**{spec.name: getattr(args, spec.name) for spec in fields(Limits)})
