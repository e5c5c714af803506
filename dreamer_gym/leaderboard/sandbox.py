"""The verified tier's sandbox: a submitter's consolidator runs in bubblewrap, where it sees only what it must.

:class:`Sandbox` builds the ``bwrap`` command from an **allow-list** (:mod:`dreamer_gym.leaderboard.sandbox_paths`):
the system libraries, the interpreter's prefixes, the installed package with its covers (simulators that refuse to
import, this package's reference procedures, data, reward code and service *hollow*), the consolidator's declared
code folders and model files, each bound read-only, and nothing else: no home, no other cache, no checkout, no
data folder of the machine. Around them: no network (``--unshare-net``), its own pid, IPC and uts namespaces, the
child as pid 1 (``--as-pid-1``, so ``/proc/1`` is the child and not bubblewrap, which holds the board's
environment and command line), no capabilities, a fresh ``/dev`` and ``/proc``, a ``/tmp`` tmpfs of bounded size,
a minimal environment, and the limits of :mod:`dreamer_gym.leaderboard.sandbox_limits` (memory, ``/tmp``,
processes under the child's own uid).

:meth:`Sandbox.self_test` runs before any consolidator: it plants a canary file outside the allow-list (a copy of
package data) and a canary variable in the environment it launches bubblewrap with, and refuses
(:class:`SandboxUnavailable`) if the child can read either, open a covered file, import a simulator or reach the
network; where ``bwrap`` is missing or the test fails, verify never runs a consolidator unsandboxed.

:class:`SandboxedConsolidator` is the board's side of the pipe (the child's is
:mod:`dreamer_gym.leaderboard.sandbox_child`): a consolidator for :func:`~dreamer_gym.leaderboard.run_track`
whose tool calls come from the sandbox. What bubblewrap does not stop is in docs/leaderboard.md, "The sandbox".
"""
from __future__ import annotations

import json
import os
import secrets
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard.sandbox_child import MAX_LINE, encode
from dreamer_gym.leaderboard.sandbox_limits import (
    Limits,
    Watchdog,
    drops_privileges,
    explain,
    free_uid,
    kill_tree,
    launcher,
)
from dreamer_gym.leaderboard.sandbox_paths import (
    Allowed,
    allowed,
    covers,
    package_root,
    unreadable,
    within,
)
from dreamer_gym.leaderboard.submission import SubmissionError

# what of the board's environment the child gets: settings that change no meaning of the run, never paths (PATH is
# the sandbox's own: the interpreter's folder and the system's, not the board's, which names its folders)
KEPT_ENV = ("LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS")
CANARY_VARIABLE = "DREAMER_GYM_SANDBOX_CANARY"  # set in bubblewrap's environment by the self-test only
# where the self-test plants its canary: outside /tmp (the sandbox's /tmp is a fresh tmpfs, which would hide a
# canary there for the wrong reason) and outside every allowed path
CANARY_PLACES = ("/var/tmp", ".")

_ABSENT = '''raise ImportError(f"{__name__} is hidden inside the verify sandbox: a verified consolidator may not run a \
simulator (docs/leaderboard.md, 'The verified tier')")
'''
_HOLLOW = '''"""Hidden inside the verify sandbox (dreamer_gym.leaderboard.sandbox): names import, using one refuses."""


class _Hidden:
    __slots__ = ("_what",)

    def __init__(self, what):
        object.__setattr__(self, "_what", what)

    def _refuse(self, *args, **kwargs):
        raise ImportError(f"{self._what} is hidden inside the verify sandbox: a verified consolidator may not use "
                          "the package's data, reference procedures, simulators or reward code "
                          "(docs/leaderboard.md, 'The verified tier')")

    __call__ = __iter__ = __len__ = __contains__ = __getitem__ = __mro_entries__ = _refuse

    def __getattr__(self, name):
        self._refuse()

    def __repr__(self):
        return f"<hidden {self._what}>"


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Hidden(f"{__name__}.{name}")
'''


class SandboxUnavailable(ConfigError):
    """The sandbox cannot run here (no ``bwrap``, or its self-test failed): verify refuses, one line."""


class SandboxViolation(SubmissionError):
    """The consolidator failed inside the sandbox (a hidden import, file or the network, or a limit it breached):
    a failure, not a score."""


@dataclass
class Sandbox:
    """How verify isolates a consolidator. ``binary``: the bubblewrap executable (a test points it at a missing
    one to see the refusal); ``hidden``: paths to cover where an allowed folder holds them (verify adds its work
    folder, where the fresh pool is); ``code``: folders of the submitter's code, bound read-only and put on
    ``PYTHONPATH``; ``models``: model files or folders the consolidator loads, bound at their own paths (the
    package cache's converted models are bound anyway, :func:`~dreamer_gym.leaderboard.sandbox_paths.cache_models`);
    ``limits``: memory, ``/tmp`` and processes."""

    binary: str = "bwrap"
    hidden: tuple[Path, ...] = ()
    code: tuple[Path, ...] = ()
    models: tuple[Path, ...] = ()
    limits: Limits = field(default_factory=Limits)
    _stubs: Path | None = field(default=None, init=False, repr=False, compare=False)  # each copy writes its own
    _uid: int | None = field(default=None, init=False, repr=False, compare=False)

    def executable(self) -> str:
        found = shutil.which(self.binary)
        if found is None:
            raise SandboxUnavailable(f"verify runs the consolidator in a bubblewrap sandbox and `{self.binary}` is not "
                                     "installed: run `make sandbox` (apt-get install bubblewrap); it never runs unsandboxed")
        return found

    def stubs(self) -> Path:
        if self._stubs is None:
            self._stubs = Path(tempfile.mkdtemp(prefix="dreamer-gym-sandbox-"))
            weakref.finalize(self, shutil.rmtree, self._stubs, True)
            (self._stubs / "absent.py").write_text(_ABSENT)
            (self._stubs / "hollow.py").write_text(_HOLLOW)
            for stub in self._stubs.iterdir():
                stub.chmod(0o644)  # bound file by file: readable by the child's own uid
        return self._stubs

    def uid(self) -> int | None:
        """The child's own uid where the board is root (drawn once per sandbox), else ``None`` (the caller's)."""
        if self._uid is None and drops_privileges():
            self._uid = free_uid()
        return self._uid

    def allowed(self) -> Allowed:
        """The allow-list; with a uid of its own the child must be able to read the declared code and models."""
        allow = allowed(self.code, self.models, readable_only=self.uid() is not None)
        if self.uid() is not None:
            for path in (*allow.code, *(source for source, seen in allow.models if source == seen)):
                if bad := unreadable(path):
                    raise ConfigError(f"{str(bad[0])!r} is not readable by the sandbox's own uid (it reads only what "
                                      f"any user may): run `chmod -R o+rX {path}`")
        return allow

    def command(self, argv: Sequence[str]) -> list[str]:
        """The ``bwrap`` command line that runs ``argv`` inside the sandbox."""
        allow = self.allowed()
        absent, hollow, covered = covers(allow.roots(), self.hidden)
        stubs, uid = self.stubs(), self.uid()
        cmd = [self.executable(), *parents(allow.system)]
        for path in allow.system:
            cmd += ["--ro-bind", str(path), str(path)]
        for link, target in allow.links:
            cmd += ["--symlink", target, link]
        cmd += ["--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--size", str(self.limits.tmp_mb * 2**20),
                "--tmpfs", "/tmp"]
        # after the fresh /tmp: a CI clone sits there, and the child's cache with the converted models
        binds = [*((p, p) for p in (*allow.runtime, *allow.code)), *allow.models]
        cmd += parents([seen for _, seen in binds])
        for path, seen in binds:
            cmd += ["--ro-bind", str(path), str(seen)]
        for path in covered:
            cmd += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
        for path in absent:
            cmd += ["--tmpfs", str(path), "--ro-bind", str(stubs / "absent.py"), str(path / "__init__.py")]
        for path in hollow:
            if path.is_dir():
                cmd += ["--tmpfs", str(path), "--ro-bind", str(stubs / "hollow.py"), str(path / "__init__.py")]
            else:
                cmd += ["--ro-bind", str(stubs / "hollow.py"), str(path)]
        cmd += ["--remount-ro", "/", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--as-pid-1", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        if uid is not None:  # what setpriv needs to drop to the child's uid; it drops these too
            cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
        cmd += ["--clearenv", "--setenv", "HOME", "/tmp", "--setenv", "USER", "sandbox", "--setenv", "HF_HUB_OFFLINE",
                "1", "--setenv", "PATH", os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
                "--chdir", "/tmp"]
        for name in KEPT_ENV:
            if name in os.environ:
                cmd += ["--setenv", name, os.environ[name]]
        if allow.code:
            cmd += ["--setenv", "PYTHONPATH", os.pathsep.join(map(str, allow.code))]
        return [*cmd, "--", *launcher(self.limits, uid), *argv]

    def self_test(self, timeout_s: float = 120.0) -> None:
        """Start the sandbox once with canaries planted; :class:`SandboxUnavailable` if the child reads either,
        or anything else it must not (module docstring)."""
        allow = self.allowed()
        absent, hollow, covered = covers(allow.roots(), self.hidden)
        folders = [p for p in hollow if p.is_dir()] + [p for p in covered if p.is_dir()]
        # a file the cover hides: not a hollow folder's stub (__init__.py) nor a compiled copy, which a child that
        # may write (a broken sandbox left root) could compile from the stub itself and then read: a false leak
        hidden = next((str(p) for d in folders for p in sorted(d.rglob("*"))
                       if p.is_file() and p.name != "__init__.py" and "__pycache__" not in p.parts), "")
        token = secrets.token_hex(16)
        with planted_canary(allow.roots()) as canary:
            request = {"hidden": [hidden] if hidden else [], "canaries": [str(canary)],
                       "simulators": [p.name for p in absent]}
            cmd = self.command([sys.executable, "-m", "dreamer_gym.leaderboard.sandbox_probe", json.dumps(request)])
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                                      env={**os.environ, CANARY_VARIABLE: token})
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise SandboxUnavailable(f"the verify sandbox did not start ({exc}); verify never runs a consolidator "
                                         "unsandboxed") from exc
        try:
            report = json.loads(done.stdout.strip().splitlines()[-1])
            leaks = list(report["leaks"])
        except (IndexError, ValueError, KeyError, TypeError):
            reason = (done.stdout + done.stderr).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            if "Unknown option" in reason[0]:  # --size on a tmpfs (the /tmp limit) came with bubblewrap 0.8.0
                reason[0] += " (the sandbox needs bubblewrap 0.8.0 or newer: `bwrap --version`)"
            raise SandboxUnavailable(f"the verify sandbox failed its self-test: {reason[0]}; verify never runs a "
                                     "consolidator unsandboxed") from None
        leaks += [f"the board's environment is readable ({CANARY_VARIABLE} in what the child sees)"
                  for seen in report.get("seen", []) if token in str(seen)][:1]
        if done.returncode != 0 or leaks:
            said = leaks[0] if leaks else f"exit {done.returncode}"
            raise SandboxUnavailable(f"the verify sandbox failed its self-test: {said}; verify never runs a "
                                     "consolidator unsandboxed")


def parents(paths: Sequence[Path]) -> list[str]:
    """``--dir`` for each folder above ``paths`` (bubblewrap would make them ``0700``, which the child's own uid
    could not pass through), outermost first, each once; under ``/tmp`` writable by all like ``/tmp`` itself (the
    child's cache, where the converted models are bound, is where Hugging Face and torch keep theirs too)."""
    out: list[Path] = []
    for path in paths:
        out += [p for p in reversed(Path(path).parents[:-1]) if p != Path("/tmp") and p not in out]
    return [arg for p in out for arg in (*(("--perms", "1777") if p.is_relative_to("/tmp") else ()), "--dir", str(p))]


@contextmanager
def planted_canary(roots: Sequence[Path]) -> Iterator[Path]:
    """A copy of package data in a fresh folder outside ``roots`` and outside ``/tmp``, readable by any user (so
    only the allow-list can keep it out); removed on exit."""
    data = package_root() / "data"
    source = next((p for p in sorted(data.rglob("*")) if p.is_file()), None) if data.is_dir() else None
    bases = [Path(place).resolve() for place in CANARY_PLACES]
    base = next((b for b in bases if b.is_dir() and os.access(b, os.W_OK) and not within(b, roots)), None)
    if base is None:
        raise SandboxUnavailable(f"the sandbox's self-test found no writable folder outside the allow-list for its "
                                 f"canary (tried {', '.join(CANARY_PLACES)}); verify never runs unchecked")
    folder = Path(tempfile.mkdtemp(prefix="dreamer-gym-canary-", dir=base))
    try:
        folder.chmod(0o755)
        canary = folder / (source.name if source else "canary.txt")
        canary.write_bytes(source.read_bytes() if source else secrets.token_bytes(64))
        canary.chmod(0o644)
        yield canary
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class Channel:
    """JSON lines to and from the sandboxed child, each read bounded by the stage's deadline; a limit the child
    breached (the :class:`~dreamer_gym.leaderboard.sandbox_limits.Watchdog`'s, or one its error names) is the
    violation's reason."""

    def __init__(self, process: subprocess.Popen, stderr: IO[str], deadline: float, *, watchdog: Watchdog,
                 limits: Limits, timeout_s: float) -> None:
        self.process, self.stderr, self.deadline = process, stderr, deadline
        self.watchdog, self.limits, self.timeout_s = watchdog, limits, timeout_s
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        self._selector.register(process.stdout, selectors.EVENT_READ)

    def said(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().strip()[-2000:]

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.process.stdin.write(encode(message).encode())
            self.process.stdin.flush()
        except BrokenPipeError:
            self.receive()  # the child's last word (its error) says why
            raise SandboxViolation(f"the consolidator's sandboxed process stopped reading: {self.said()}") from None

    def receive(self) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            left = self.deadline - time.monotonic()
            if left <= 0:
                kill_tree(self.process.pid)
                raise SandboxViolation(f"the consolidator ran past its time in the sandbox ({self.timeout_s:.0f} s, "
                                       "`--timeout`) and was stopped")
            if not self._selector.select(timeout=min(left, 5.0)):
                continue
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                self.process.wait()
                self.watchdog.sample()
                if self.watchdog.breach:
                    raise SandboxViolation(self.watchdog.breach)
                raise SandboxViolation(f"the consolidator's sandboxed process exited ({self.process.returncode}) "
                                       f"mid-run (peak resident {self.watchdog.peak_mb:.0f} MiB of the "
                                       f"{self.limits.memory_mb} MiB limit): {self.said()}")
            self._buffer += chunk
            if len(self._buffer) > MAX_LINE:
                raise SandboxViolation(f"the consolidator sent a message over {MAX_LINE} bytes")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            raise SandboxViolation(f"the sandboxed consolidator sent a line that is not JSON: {line[:200]!r}") from None
        if not isinstance(message, dict):
            raise SandboxViolation(f"the sandboxed consolidator sent {type(message).__name__}, not a JSON object")
        if "error" in message:
            limit = explain(str(message["error"]), message.get("usage") or {}, self.limits)
            raise SandboxViolation(f"the consolidator failed inside the verify sandbox: {message['error']}"
                                   + (f" ({limit})" if limit else ""))
        return message


class SandboxedConsolidator:
    """The board's side: a consolidator whose tool calls come over the pipe from the sandbox. ``ready`` holds the
    child's name and LLM block once the ``with`` block is entered; :attr:`peak_mb` the most resident memory its
    process tree held (while it runs, and after)."""

    def __init__(self, sandbox: Sandbox, consolidator: str, config: Any, timeout_s: float = 3600.0) -> None:
        self.name = consolidator
        self.sandbox, self.config, self.timeout_s = sandbox, config, timeout_s
        self.channel: Channel | None = None
        self.watchdog: Watchdog | None = None
        self.ready: dict[str, Any] = {}

    @property
    def peak_mb(self) -> float:
        return self.watchdog.peak_mb if self.watchdog else 0.0

    def __enter__(self) -> SandboxedConsolidator:
        cmd = self.sandbox.command([sys.executable, "-m", "dreamer_gym.leaderboard.sandbox_child", self.name])
        stderr = tempfile.TemporaryFile("w+")
        process = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
        limits = self.sandbox.limits
        self.watchdog = Watchdog(process.pid, limits.memory_mb).__enter__()
        self.channel = Channel(process, stderr, time.monotonic() + self.timeout_s, watchdog=self.watchdog,
                               limits=limits, timeout_s=self.timeout_s)
        try:
            self.channel.send({"hello": {"config": json.loads(json.dumps(asdict(self.config), default=str))}})
            self.ready = self.channel.receive()["ready"]
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        channel, self.channel = self.channel, None
        if channel is None:
            return
        try:
            if exc[0] is None:
                channel.send({"close": True})
                channel.process.wait(timeout=60)
        finally:
            if channel.process.poll() is None:
                kill_tree(channel.process.pid)
                channel.process.wait()
            if self.watchdog is not None:
                self.watchdog.__exit__()
            channel.stderr.close()

    def actions(self, env: Any, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        if self.channel is None:
            raise RuntimeError("start the sandboxed consolidator with `with SandboxedConsolidator(...)` first")
        self.channel.send({"reset": {"obs": obs, "info": info}})
        while True:
            message = self.channel.receive()
            if "action" not in message:
                raise SandboxViolation(f"the sandboxed consolidator sent {sorted(message)} where a tool call was due")
            obs, info = yield str(message["action"])
            self.channel.send({"step": {"obs": obs, "info": info}})
