"""Record the class list the ScienceWorld JVM's class archive is dumped from (jvm_archive.py): a maintainers' step.

Apart from jvm_archive.py because it drives the simulator (scienceworld.py imports jvm_archive.py, not this).
"""
from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

from dreamer_gym.suites.base import EpisodeTask
from dreamer_gym.suites.scienceworld import DEFAULT_JAVA_OPTS, FAMILIES, ScienceWorldSuite


def record_class_list(out: Path, java_opts: tuple[str, ...] = ()) -> int:
    """Write the class list of a representative run (every training family's gold path on one JVM) to ``out``
    (gzipped): the maintainers' step when the simulator's jar changes. Returns the number of classes."""
    with tempfile.TemporaryDirectory() as work:
        listing = Path(work) / "classes.lst"
        suite = ScienceWorldSuite(java_opts=(*DEFAULT_JAVA_OPTS, *java_opts, f"-XX:DumpLoadedClassList={listing}"),
                                  class_archive=False)
        with suite:
            for family in FAMILIES:
                task = EpisodeTask(family=family, variation=suite.variations(family, "train")[0])
                path = suite.gold_path(task)
                suite.start(task)
                suite.valid_actions()
                for action in path:
                    suite.step(action)
        lines = listing.read_text().splitlines()
    out.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    return len(lines)
