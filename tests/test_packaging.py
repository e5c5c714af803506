"""What an install puts on the path: `dreamer_gym` and nothing else. `baselines/` and `leaderboards/` are
folders of configs and docs in the repository, not top-level packages (both names are taken on PyPI)."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


@pytest.mark.parametrize("name", ["baselines", "leaderboards"])
def test_repository_folders_are_not_installed_packages(tmp_path: Path, name: str) -> None:
    proc = _python(f"import {name}", tmp_path)
    assert proc.returncode != 0 and f"ModuleNotFoundError: No module named '{name}'" in proc.stderr
    assert not (ROOT / name / "__init__.py").exists()
    assert (ROOT / name / "README.md").is_file()


def test_the_library_rooms_import_from_anywhere(tmp_path: Path) -> None:
    proc = _python("import dreamer_gym.consolidators, dreamer_gym.studies.validity; print('ok')", tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_only_dreamer_gym_is_packaged() -> None:
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    assert find["include"] == ["dreamer_gym*"]


def test_the_wheel_holds_dreamer_gym_only(tmp_path: Path) -> None:
    """What `pip install dreamer-gym` would put in site-packages: build the wheel and list its top level."""
    import shutil
    import zipfile

    # a clean copy: setuptools builds in place, and a stale build/ folder could leak old modules into the wheel
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv*", "build", "dist", "runs", "*.egg-info",
                                                             "__pycache__", ".pytest_cache", ".benchmarks"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                           str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("dreamer_gym-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    top = {name.split("/")[0] for name in names}
    assert top == {"dreamer_gym", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}, top
    # the data the package reads at run time: tracks, the submission schema, the shipped pools and recipes
    for data in ("dreamer_gym/data/tracks/scienceworld.yaml", "dreamer_gym/data/leaderboard/submission-v1.schema.json",
                 "dreamer_gym/data/scienceworld-heldout-v0.json.gz", "dreamer_gym/data/configs/oplevel-cpu.yaml"):
        assert data in names, data
