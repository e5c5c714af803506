"""The ScienceWorld JVM's class archive (dreamer_gym/suites/jvm_archive.py): made once, mapped, same simulator."""
from __future__ import annotations

import gzip
import os
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from dreamer_gym.suites.base import EpisodeTask
from dreamer_gym.suites.jvm_archive import CLASS_LIST, archive_opts
from dreamer_gym.suites.scienceworld import DEFAULT_JAVA_OPTS, ScienceWorldSuite, _import_scienceworld

pytestmark = pytest.mark.jvm


def _classpath() -> str:
    from py4j.java_gateway import find_jar_path

    return os.pathsep.join((find_jar_path(), _import_scienceworld()[-1]))


def _play(suite: ScienceWorldSuite, task: EpisodeTask) -> list[tuple[str, float]]:
    path = suite.gold_path(task)
    trace = [(suite.start(task), 0.0)]
    for action in path:
        outcome = suite.step(action)
        trace.append((outcome.observation, outcome.score))
    return trace


def test_the_archive_is_made_once_and_a_jvm_that_must_map_it_plays_the_same_episode(tmp_path, monkeypatch):
    """`-Xshare:on` makes the JVM refuse to start unless it maps the archive; the gold path then gives the same
    observations and scores as a JVM without one (hashCode=2 is not undone by archived objects)."""
    monkeypatch.setenv("DREAMER_GYM_CACHE", str(tmp_path))
    opts = archive_opts(_classpath())
    assert len(opts) == 1 and opts[0].startswith("-XX:SharedArchiveFile=")
    archive = Path(opts[0].split("=", 1)[1])
    assert archive.parent == tmp_path / "jvm" and archive.stat().st_size > 1_000_000
    made = archive.stat().st_mtime_ns
    assert archive_opts(_classpath()) == opts and archive.stat().st_mtime_ns == made  # mapped, not dumped again
    assert [p.name for p in archive.parent.iterdir()] == [archive.name]  # no partial dump left beside it

    task = EpisodeTask("power-component", 3)
    with ScienceWorldSuite(java_opts=(*DEFAULT_JAVA_OPTS, "-Xshare:on")) as mapped:
        with_archive = _play(mapped, task)
        assert str(archive) in Path(f"/proc/{mapped.java_pid}/cmdline").read_text()
    with ScienceWorldSuite(class_archive=False) as plain:
        without = _play(plain, task)
    assert with_archive == without and with_archive[-1][1] == 100.0


def test_a_cache_that_cannot_be_written_leaves_the_jvm_without_an_archive(tmp_path, monkeypatch):
    """No options, no error: the suite then starts the same JVM as ``class_archive=False``, which the test above
    plays."""
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("DREAMER_GYM_CACHE", str(blocked))
    assert archive_opts(_classpath()) == ()
    assert blocked.read_text() == "not a folder"


def test_the_shipped_class_list_names_classes_of_the_installed_jars():
    """The list is recorded for the pinned simulator (dreamer_gym.suites.jvm_class_list); a new jar needs a new list."""
    listed = {
        line.split()[0] for line in gzip.decompress(resources.files("dreamer_gym").joinpath("data", CLASS_LIST).read_bytes())
        .decode().splitlines() if line and not line.startswith(("#", "@"))
    }
    in_jars: set[str] = set()
    for jar in _classpath().split(os.pathsep):
        with zipfile.ZipFile(jar) as archive:
            in_jars |= {name[: -len(".class")] for name in archive.namelist() if name.endswith(".class")}
    from_jars = {name for name in listed if not name.startswith(("java/", "javax/", "jdk/", "sun/", "com/sun/"))}
    assert len(from_jars) > 1_000
    assert from_jars <= in_jars, sorted(from_jars - in_jars)[:5]
