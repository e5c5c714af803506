"""The verified tier's sandbox: a submitter's consolidator runs in bubblewrap, where it cannot run the simulators,
read the pools, the reference procedures or the reward code, or reach the network.

:class:`Sandbox` builds the ``bwrap`` command: the root read-only, no network (``--unshare-net``), its own pid,
IPC and session, no capabilities (so it cannot unmount what hides a path), a fresh ``/tmp``, a minimal
environment, and each hidden path covered (:func:`hidden_paths`). A hidden simulator package gets an
``__init__`` that refuses to import; a hidden module of this package gets a *hollow* stand-in whose names
import (so ``import dreamer_gym`` still works) and refuse when used. :meth:`Sandbox.self_test` checks, before any
consolidator runs, that the sandbox starts, cannot open a hidden file, cannot import the simulator and has no
network; where ``bwrap`` is missing or the test fails, :class:`SandboxUnavailable`: verify never runs a
consolidator unsandboxed.

:class:`SandboxedConsolidator` is the board's side of the pipe (the child's is
:mod:`dreamer_gym.leaderboard.sandbox_child`): a consolidator for :func:`~dreamer_gym.leaderboard.run_track`
whose tool calls come from the sandbox. What bubblewrap does not stop is in docs/leaderboard.md, "The verified
tier".
"""
from __future__ import annotations

import importlib.util
import json
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard.sandbox_child import MAX_LINE, encode
from dreamer_gym.leaderboard.submission import SubmissionError

# simulators a consolidator must not run: their packages (found without importing them) and the JVM
SIMULATORS = ("scienceworld", "alfworld", "textworld", "browsergym", "miniwob", "playwright")
SYSTEM_HIDDEN = ("/usr/lib/jvm", "/usr/lib/chromium", "/root/.cache/ms-playwright", "/root/.cache/alfworld")
# this package's modules that hold reference procedures, simulators, the reward code or the service
PACKAGE_HIDDEN = ("contract/reward.py", "service", "suites/scienceworld.py", "suites/alfworld.py",
                  "suites/alfworld_gen", "suites/miniwob.py", "suites/webarena.py", "suites/latency.py", "suites/web",
                  "data")
# the repo's recorded results, studies and baselines, and its copies of the package (build/, git objects)
REPO_HIDDEN = ("leaderboards", "research", "baselines", "build", ".git")
CACHE_KEPT = ("models",)  # the pool cache is hidden; converted LLM weights (a local model's) stay readable
KEPT_ENV = ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "CUDA_VISIBLE_DEVICES", "HF_HOME", "OMP_NUM_THREADS")

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
    """The consolidator failed inside the sandbox (a hidden import, file or the network): a failure, not a score."""


def package_root() -> Path:
    return Path(__file__).resolve().parents[1]


def simulator_dirs() -> list[Path]:
    """The installed simulators' package folders (``find_spec`` of a top-level name imports nothing)."""
    out = []
    for name in SIMULATORS:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            out.append(Path(location))
    return out


def hidden_paths(extra: Sequence[Path] = ()) -> tuple[list[Path], list[Path], list[Path]]:
    """``(absent, hollow, covered)``: simulator packages that refuse to import; this package's modules that import
    hollow (and their compiled copies); folders and files covered by an empty one. Only paths that exist."""
    from dreamer_gym.paths import cache_root

    pkg = package_root()
    hollow = [pkg / p for p in PACKAGE_HIDDEN if (pkg / p).exists()]
    covered = [Path(p) for p in SYSTEM_HIDDEN] + list(extra)
    if (pkg.parent / "pyproject.toml").is_file():  # a checkout: its results, studies and copies of the package
        covered += [pkg.parent / p for p in REPO_HIDDEN]
    cache = cache_root()
    if cache.is_dir():
        covered += [p for p in cache.iterdir() if p.name not in CACHE_KEPT]
    for path in hollow:
        if path.suffix == ".py":  # the compiled module beside it holds the same constants
            covered += sorted((path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"))
    return simulator_dirs(), hollow, [p for p in covered if p.exists()]


def runtime_under_tmp() -> list[str]:
    """What the child needs to run that a fresh ``/tmp`` would hide: the interpreter's prefixes and this package's
    root, where they lie under ``/tmp`` (a clone checked out there, as CI does). Bound back read-only before the
    covers, so what the covers hide inside them stays hidden."""
    roots = {Path(sys.prefix), Path(sys.base_prefix), Path(__file__).resolve().parents[2]}
    tmp = Path("/tmp").resolve()
    under = sorted(str(p.resolve()) for p in roots if p.resolve().is_relative_to(tmp) and p.resolve() != tmp)
    return [p for p in under if not any(p != q and p.startswith(q + os.sep) for q in under)]  # outermost only


@dataclass
class Sandbox:
    """How verify isolates a consolidator. ``binary``: the bubblewrap executable (a test points it at a missing
    one to see the refusal); ``hidden``: more paths to cover (verify adds its work folder, where the fresh pool
    is); ``code``: folders of the submitter's code, bound back in read-only and put on ``PYTHONPATH``."""

    binary: str = "bwrap"
    hidden: tuple[Path, ...] = ()
    code: tuple[Path, ...] = ()
    _stubs: Path | None = field(default=None, init=False, repr=False, compare=False)  # each copy writes its own

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
        return self._stubs

    def command(self, argv: Sequence[str]) -> list[str]:
        """The ``bwrap`` command line that runs ``argv`` inside the sandbox."""
        absent, hollow, covered = hidden_paths(self.hidden)
        stubs = self.stubs()
        cmd = [self.executable(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
               "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
               "--new-session", "--cap-drop", "ALL", "--clearenv", "--setenv", "HOME", "/tmp",
               "--setenv", "HF_HUB_OFFLINE", "1", "--chdir", "/tmp"]
        for name in KEPT_ENV:
            if name in os.environ and name != "PYTHONPATH":
                cmd += ["--setenv", name, os.environ[name]]
        for path in runtime_under_tmp():  # the interpreter, its venv, this package: a CI clone sits in /tmp
            cmd += ["--ro-bind", path, path]
        code = [str(Path(p).resolve()) for p in self.code]
        for path in code:  # after the fresh /tmp (the folder may sit there), before the covers (it may hold them)
            cmd += ["--ro-bind", path, path]
        for path in covered:
            cmd += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
        for path in absent:
            cmd += ["--tmpfs", str(path), "--ro-bind", str(stubs / "absent.py"), str(path / "__init__.py")]
        for path in hollow:
            if path.is_dir():
                cmd += ["--tmpfs", str(path), "--ro-bind", str(stubs / "hollow.py"), str(path / "__init__.py")]
            else:
                cmd += ["--ro-bind", str(stubs / "hollow.py"), str(path)]
        pythonpath = [*code, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        if pythonpath:
            cmd += ["--setenv", "PYTHONPATH", os.pathsep.join(pythonpath)]
        return [*cmd, "--", *argv]

    def self_test(self, timeout_s: float = 120.0) -> None:
        """Start the sandbox once and check it hides what it must; :class:`SandboxUnavailable` if it does not."""
        absent, hollow, covered = hidden_paths(self.hidden)
        folders = [p for p in hollow if p.is_dir()] + [p for p in covered if p.is_dir()]
        probe = next((str(p) for d in folders for p in d.rglob("*") if p.is_file()), "")
        script = _SELF_TEST.format(probe=probe, simulators=[p.name for p in absent])
        cmd = self.command([sys.executable, "-c", script])
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(f"the verify sandbox did not start ({exc}); verify never runs a consolidator "
                                     "unsandboxed") from exc
        said = done.stdout.strip().splitlines()[-1:] or [""]
        if done.returncode != 0 or said != ["sandbox ok"]:
            reason = (done.stdout + done.stderr).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            raise SandboxUnavailable(f"the verify sandbox failed its self-test: {reason[0]}; verify never runs a "
                                     "consolidator unsandboxed")


_SELF_TEST = '''
import importlib, socket, sys
probe = {probe!r}
if probe:
    try:
        open(probe, "rb").read(1)
        sys.exit("a hidden file is readable: " + probe)
    except OSError:
        pass
for name in {simulators!r}:
    try:
        importlib.import_module(name)
        sys.exit("the simulator package " + name + " imports")
    except ImportError:
        pass
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3).close()
    sys.exit("the network is reachable")
except OSError:
    pass
import dreamer_gym.consolidators, dreamer_gym.leaderboard.sandbox_child
print("sandbox ok")
'''


class Channel:
    """JSON lines to and from the sandboxed child, each read bounded by the stage's deadline."""

    def __init__(self, process: subprocess.Popen, stderr: IO[str], deadline: float) -> None:
        self.process, self.stderr, self.deadline = process, stderr, deadline
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
                raise SandboxViolation("the consolidator ran past its time in the sandbox and was stopped")
            if not self._selector.select(timeout=min(left, 5.0)):
                continue
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                self.process.wait()
                raise SandboxViolation(f"the consolidator's sandboxed process exited ({self.process.returncode}) "
                                       f"mid-run: {self.said()}")
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
            raise SandboxViolation(f"the consolidator failed inside the verify sandbox: {message['error']}")
        return message


class SandboxedConsolidator:
    """The board's side: a consolidator whose tool calls come over the pipe from the sandbox. ``info`` holds
    ``ready`` (the child's name and LLM block) once :meth:`start` returns."""

    def __init__(self, sandbox: Sandbox, consolidator: str, config: Any, timeout_s: float = 3600.0) -> None:
        self.name = consolidator
        self.sandbox, self.config, self.timeout_s = sandbox, config, timeout_s
        self.channel: Channel | None = None
        self.ready: dict[str, Any] = {}

    def __enter__(self) -> SandboxedConsolidator:
        cmd = self.sandbox.command([sys.executable, "-m", "dreamer_gym.leaderboard.sandbox_child", self.name])
        stderr = tempfile.TemporaryFile("w+")
        process = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
        self.channel = Channel(process, stderr, time.monotonic() + self.timeout_s)
        self.channel.send({"hello": {"config": json.loads(json.dumps(asdict(self.config), default=str))}})
        self.ready = self.channel.receive()["ready"]
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
                channel.process.kill()
                channel.process.wait()
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
