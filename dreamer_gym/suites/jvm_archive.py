"""A class-data-sharing (CDS) archive for the ScienceWorld JVM: a quarter less start-up for every env, worker, test.

Why: every ScienceWorld env, evaluation worker and reward service starts its own JVM, and most of a start is the JVM
loading and verifying the ~2,500 Scala, py4j and JDK classes the simulator touches (measured on this 2-core machine:
2.4-2.5 s to a ready gateway without an archive, 1.4-1.8 s with one; docs/performance.md, "A shared class archive").
Java 17 can map those classes from an archive file instead (``-XX:SharedArchiveFile``).

How: the package ships the list of classes a representative run loads (``data/scienceworld-jvm-classes.lst.gz``,
written by ``jvm_class_list.record_class_list``). The first JVM start on a machine dumps the archive from that list
into the user cache (~3 s, once per jar, py4j jar and Java build), and every later start maps it. Anything that goes
wrong (no cache folder, an old Java, a failed dump) leaves the JVM exactly as it was without an archive: the archive
changes start-up, never behaviour (``-Xshare:auto`` maps it only when it matches, and the dump uses SerialGC, so no
heap objects, and with them no identity hash codes, are archived; ``-XX:hashCode=2`` still holds).
"""
from __future__ import annotations

import gzip
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

logger = logging.getLogger(__name__)

CLASS_LIST = "scienceworld-jvm-classes.lst.gz"
# dump options: SerialGC, so that Java 17 archives no heap objects (it does so only under G1)
_DUMP_OPTS = ("-Xshare:dump", "-XX:+UseSerialGC", "-Xmx1g")


def cache_dir() -> Path:
    """Where archives live: ``$DREAMER_GYM_CACHE/jvm``, else ``$XDG_CACHE_HOME/dreamer_gym/jvm``, else ``~/.cache``."""
    root = os.environ.get("DREAMER_GYM_CACHE")
    if root:
        return Path(root) / "jvm"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "dreamer_gym" / "jvm"


def _java_build(java: str) -> str:
    """The Java binary behind ``java`` (resolved, with its size and time): no ``java -version`` run on every start.
    A Java upgrade replaces the binary; and a JVM maps only an archive of its own build anyway (``-Xshare:auto``)."""
    found = shutil.which(java)
    if found is None:
        raise FileNotFoundError(f"no `{java}` on PATH")
    binary = Path(found).resolve()
    stat = binary.stat()
    return f"{binary}:{stat.st_size}:{stat.st_mtime_ns}"


def archive_key(classpath: str, java: str = "java") -> str:
    """A name that changes with each jar on the class path, the Java build and the shipped class list."""
    digest = hashlib.sha256(_java_build(java).encode())
    for jar in classpath.split(os.pathsep):
        stat = Path(jar).stat()
        digest.update(f"{Path(jar).resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update(resources.files("dreamer_gym").joinpath("data", CLASS_LIST).read_bytes())
    return digest.hexdigest()[:16]


def archive_opts(classpath: str, *, java: str = "java", folder: Path | None = None) -> tuple[str, ...]:
    """The JVM options that map the archive for ``classpath``, dumping it first if this machine has none yet.

    Returns ``()`` (a JVM without an archive) when the archive cannot be made: the cause is logged, never raised.
    """
    try:
        folder = folder or cache_dir()
        path = folder / f"scienceworld-{archive_key(classpath, java)}.jsa"
        if not path.exists():
            _dump(classpath, path, java)
        return (f"-XX:SharedArchiveFile={path}",)
    except (OSError, subprocess.SubprocessError) as exc:
        logger.info("no JVM class archive (%s); the JVM starts without one", exc)
        return ()


def _dump(classpath: str, path: Path, java: str) -> None:
    """Dump into a temporary file and rename it, so that concurrent first starts never map a half-written one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as work:
        classes = Path(work) / "classes.lst"
        classes.write_bytes(gzip.decompress(resources.files("dreamer_gym").joinpath("data", CLASS_LIST).read_bytes()))
        partial = Path(work) / path.name
        subprocess.run(
            [java, *_DUMP_OPTS, f"-XX:SharedClassListFile={classes}", f"-XX:SharedArchiveFile={partial}",
             "-classpath", classpath],
            capture_output=True, timeout=300, check=True,
        )
        os.replace(partial, path)
    logger.info("JVM class archive written to %s", path)
