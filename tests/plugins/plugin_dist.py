"""Install a plug-in the way a user's package is installed: a module outside ``dreamer_gym`` plus a real
``NAME-0.1.dist-info`` (METADATA + entry_points.txt) in one folder, so that ``importlib.metadata`` finds its
entry points once the folder is on ``sys.path``; then run the CLI on it in a fresh interpreter.

Nothing inside ``dreamer_gym/`` is edited and nothing is registered in the test's own process: the only way the
CLI can find the plug-in is the entry point, exactly as for ``pip install my-plugin``.

Used by every plug-in test (executor, LLM backend, downstream agent, training algorithm)::

    site = write_dist(tmp_path, "my-plugin", {"my_plugin.py": SOURCE},
                      {"dreamer_gym.executors": {"mine": "my_plugin:build"}})
    proc = run_cli(site, "consolidate", "--executor", "mine", ...)
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def write_dist(site: Path, name: str, modules: Mapping[str, str],
               entry_points: Mapping[str, Mapping[str, str]], version: str = "0.1") -> Path:
    """Write ``modules`` (file name -> source, dedented) and ``name``'s dist-info into ``site``; return ``site``.

    Args:
        site: the folder that goes on ``PYTHONPATH`` (several dists may share one).
        name: the distribution name (``my-plugin``; normalised to ``my_plugin`` for the folder, as pip does).
        modules: the plug-in's source files, relative to ``site`` (``"my_plugin.py"`` or ``"pkg/mod.py"``).
        entry_points: group -> {entry-point name -> ``"module:attr"``}.
    """
    site.mkdir(parents=True, exist_ok=True)
    for rel, source in modules.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    dist = site / f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = []
    for group, points in entry_points.items():
        lines += [f"[{group}]", *(f"{key} = {ref}" for key, ref in points.items()), ""]
    (dist / "entry_points.txt").write_text("\n".join(lines))
    return site


def plugin_env(site: Path, **extra: str) -> dict[str, str]:
    """The environment of a subprocess that sees ``site`` (and this checkout) on its path."""
    path = os.pathsep.join(p for p in (str(site), str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def run_cli(site: Path, *args: str, timeout: float = 300, **extra_env: str) -> subprocess.CompletedProcess[str]:
    """``python -m dreamer_gym.cli ARGS`` in a fresh interpreter with ``site`` on ``PYTHONPATH``."""
    return subprocess.run([sys.executable, "-m", "dreamer_gym.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=plugin_env(site, **extra_env), cwd=site)
