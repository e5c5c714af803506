"""What the verify sandbox shows: an allow-list of read-only binds, and the covers inside them.

Nothing of the machine is visible unless it is on this list (:func:`allowed`): the system libraries and tools the
interpreter and torch load (:data:`SYSTEM_DIRS`, :data:`SYSTEM_FILES`), the interpreter's prefixes
(``sys.base_prefix`` and the venv, ``sys.prefix``), the installed ``dreamer_gym`` package folder (never the
checkout around it, so its results, studies and git objects are simply not there; an editable install finds the
package through its finder in site-packages, which names the folder itself), the submitter's declared code
folders and declared model files. Inside those, covers (:func:`covers`) hide what the package must not hand a
consolidator: the simulators' packages refuse to import, this package's reference procedures, data, reward code
and service are *hollow*, and the JVM and Chromium are empty folders.

Why an allow-list: a hide-list leaves everything it did not think of, such as another checkout of the project
elsewhere on the machine, readable and importable (issue 38).
"""
from __future__ import annotations

import importlib.util
import stat
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dreamer_gym.errors import ConfigError

# simulators a consolidator must not run: their packages (found without importing them)
SIMULATORS = ("scienceworld", "alfworld", "textworld", "browsergym", "miniwob", "playwright")
# this package's modules that hold reference procedures, simulators, the reward code or the service
PACKAGE_HIDDEN = ("contract/reward.py", "service", "suites/scienceworld.py", "suites/alfworld.py",
                  "suites/alfworld_gen", "suites/miniwob.py", "suites/webarena.py", "suites/latency.py", "suites/web",
                  "data")
# the least of the system that Python, numpy, torch, transformers and xgrammar load (measured by dropping each:
# docs/leaderboard.md, "The sandbox"): the tools, the shared libraries (on a multiarch system only its own folder
# of /usr/lib, not the rest: a system Python's packages, node_modules, the JVM), the loader's cache; /usr/share,
# /etc, /var, /opt, /home, /root, /srv, /mnt and /work are not shown
SYSTEM_DIRS = ("/usr/bin", "/usr/lib64", "/usr/lib32", "/usr/libx32")
MULTIARCH_LIBS = f"/usr/lib/{sysconfig.get_config_var('MULTIARCH') or ''}"  # /usr/lib/x86_64-linux-gnu on Debian
SYSTEM_LINKS = ("/bin", "/lib", "/lib64", "/lib32", "/libx32", "/sbin")  # merged-/usr links, or real folders
SYSTEM_FILES = ("/etc/ld.so.cache",)
SYSTEM_HIDDEN = ("/usr/lib/jvm", "/usr/lib/chromium")  # where all of /usr/lib is shown: the JVM and browser stay dark
CACHE_MODELS = "models"  # the folder of the package's cache whose converted weights a local model reads
CHILD_CACHE = Path("/tmp/.cache/dreamer_gym")  # the child's cache_root(): its HOME is /tmp, DREAMER_GYM_CACHE unset
MAX_MODEL_FILES = 1_000  # model files are bound one by one (so a private folder around them stays private)


def package_root() -> Path:
    return Path(__file__).resolve().parents[1]


def simulator_dirs() -> list[Path]:
    """The installed simulators' package folders (``find_spec`` of a top-level name imports nothing)."""
    out = []
    for name in SIMULATORS:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            out.append(Path(location).resolve())
    return out


def cache_models(readable_only: bool) -> list[tuple[Path, Path]]:
    """The package cache's converted models (``$DREAMER_GYM_CACHE/models``) as ``(file, where the child sees it)``:
    each file bound into the child's own cache (:data:`CHILD_CACHE`), so ``smollm2-135m`` loads there without a
    conversion (docs/leaderboard.md, "Rules for a verified consolidator": a verified consolidator may read its local
    model). With ``readable_only`` (the child has a uid of its own) a model with a file only its owner may read is
    left out: the child then converts its own copy into its ``/tmp``, as on a machine with no cache."""
    from dreamer_gym.paths import cache_root

    folder = cache_root() / CACHE_MODELS
    models = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")) if folder.is_dir() else []
    out: list[tuple[Path, Path]] = []
    for model in models:  # a `.convert-*` folder is a conversion in progress
        files = sorted(p for p in model.rglob("*") if p.is_file())
        if files and len(files) <= MAX_MODEL_FILES and not (readable_only and any(unreadable(f) for f in files)):
            out += [(f, CHILD_CACHE / CACHE_MODELS / f.relative_to(folder)) for f in files]
    return out


def within(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def outermost(paths: Sequence[Path]) -> list[Path]:
    """The paths none of the others contain, in order (a venv inside the checkout is bound once, not twice)."""
    unique = list(dict.fromkeys(paths))
    return [p for p in unique if not any(p != q and p.is_relative_to(q) for q in unique)]


def unreadable(path: Path) -> list[Path]:
    """What under ``path`` a uid that owns nothing cannot read (no ``o+r``, or a folder without ``o+rx``)."""
    paths = [path, *path.rglob("*")] if path.is_dir() else [path]
    out = []
    for p in paths:
        mode = p.stat().st_mode
        need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
        if mode & need != need:
            out.append(p)
    return out


@dataclass(frozen=True)
class Allowed:
    """The binds of one sandbox: ``system`` (folders, ``links`` as ``(link, target)``, files), ``runtime`` (the
    interpreter's prefixes and the package), ``code`` (folders, put on ``PYTHONPATH``), ``models`` (files, as
    ``(file, where the child sees it)``: declared ones at their own path, the cache's in the child's cache)."""

    system: tuple[Path, ...]
    links: tuple[tuple[str, str], ...]
    runtime: tuple[Path, ...]
    code: tuple[Path, ...]
    models: tuple[tuple[Path, Path], ...]

    def roots(self) -> list[Path]:
        """What of the machine is shown (sources, not where the child sees them)."""
        return [*self.system, *self.runtime, *self.code, *(source for source, _ in self.models)]


def system_binds() -> tuple[list[Path], list[tuple[str, str]]]:
    """The system folders and files that exist here, and the top-level links (``/lib -> usr/lib``) to recreate."""
    libs = MULTIARCH_LIBS if MULTIARCH_LIBS != "/usr/lib/" and Path(MULTIARCH_LIBS).is_dir() else "/usr/lib"
    binds = [Path(p) for p in (SYSTEM_DIRS[0], libs, *SYSTEM_DIRS[1:], *SYSTEM_FILES) if Path(p).exists()]
    links = []
    for name in SYSTEM_LINKS:
        path = Path(name)
        if path.is_symlink():  # kept where it leads into what is shown (/lib -> usr/lib, not /sbin -> usr/sbin)
            target = Path("/", path.readlink())
            if any(bind == target or bind.is_relative_to(target) for bind in binds):
                links.append((name, str(path.readlink())))
        elif path.is_dir():
            binds.append(path)
    return binds, links


def check_code(folder: Path) -> Path:
    """A declared code folder, resolved: it must exist and must not hold this package (a checkout's root holds
    its results, studies and git objects: name the folder of your own code)."""
    path = folder.resolve()
    if not path.is_dir():
        raise ConfigError(f"the consolidator's code folder {str(folder)!r} is not a folder; pass the folder that "
                          "holds its module (`module:attr` imports from it)")
    if package_root().is_relative_to(path):
        raise ConfigError(f"the code folder {str(path)!r} holds the dreamer_gym package (a checkout or an "
                          "environment): the sandbox shows the installed package by itself; declare the folder "
                          "of the consolidator's own code")
    return path


def model_files(paths: Sequence[Path]) -> list[Path]:
    """Declared model files and folders as the files to bind, each at its own path (a snapshot's symlinks are
    bound as the blobs they point to)."""
    files: list[Path] = []
    for given in paths:
        path = Path(given).absolute()
        if not path.exists():
            raise ConfigError(f"the declared model path {str(given)!r} does not exist; declare the folder or files "
                              "the consolidator loads its model from")
        files += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        if len(files) > MAX_MODEL_FILES:
            raise ConfigError(f"the declared model paths hold over {MAX_MODEL_FILES} files; declare the model's "
                              f"own folder, not {str(given)!r}")
    return files


def allowed(code: Sequence[Path] = (), models: Sequence[Path] = (), readable_only: bool = False) -> Allowed:
    """The allow-list (module docstring): what the sandbox binds read-only, nothing else; ``models``: the declared
    model files or folders (the cache's converted models come too, :func:`cache_models`)."""
    system, links = system_binds()
    runtime = outermost([p for p in (Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), package_root())
                         if not within(p, system)])
    declared = [(f, f) for f in model_files(models)]
    return Allowed(tuple(system), tuple(links), tuple(runtime), tuple(check_code(Path(c)) for c in code),
                   tuple(declared + cache_models(readable_only)))


def covers(roots: Sequence[Path], hidden: Sequence[Path] = ()) -> tuple[list[Path], list[Path], list[Path]]:
    """``(absent, hollow, covered)`` inside ``roots``: simulator packages that refuse to import; this package's
    modules that import hollow; folders and files covered by an empty one (the JVM and Chromium, the compiled
    copies of hollow modules, and ``hidden``: verify's work folder with the fresh pool, where it lies inside an
    allowed path). Only paths that exist; what no root holds is not there to hide."""
    pkg = package_root()
    hollow = [pkg / p for p in PACKAGE_HIDDEN if (pkg / p).exists()]
    covered = [Path(p) for p in SYSTEM_HIDDEN] + [Path(p).resolve() for p in hidden]
    for path in hollow:
        if path.suffix == ".py":  # the compiled module beside it holds the same constants
            covered += sorted((path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"))
    inside = [p for p in covered if p.exists() and within(p, roots)]
    return [p for p in simulator_dirs() if within(p, roots)], hollow, inside
