"""What an install puts on the path: `dreamer_gym` and nothing else. `baselines/` and `leaderboards/` are
folders of configs and docs in the repository, not top-level packages (both names are taken on PyPI); `research/`
(the lab: its studies and recorded results) imports from the repository root only."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# every non-Python file a wheel may hold: what the package reads at run time. A recorded result (a summary, a log,
# a plot, a study's page) matches none of these, so it cannot ship by accident.
SHIPPED_DATA = (r"dreamer_gym/(data/[\w-]+-v\d+\.json\.gz|data/scienceworld-jvm-classes\.lst\.gz|data/webarena_tasks\.json|data/tracks/[\w-]+\.yaml|data/references/[\w-]+\.json"
                r"|data/configs/[\w.-]+\.yaml|data/leaderboard/[\w-]+\.schema\.json|prompts/\w+\.md)")


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


@pytest.mark.parametrize("name", ["baselines", "leaderboards"])
def test_repository_folders_are_not_installed_packages(tmp_path: Path, name: str) -> None:
    proc = _python(f"import {name}", tmp_path)
    assert proc.returncode != 0 and f"ModuleNotFoundError: No module named '{name}'" in proc.stderr
    assert not (ROOT / name / "__init__.py").exists()
    assert (ROOT / name / "README.md").is_file()


def test_the_lab_imports_from_the_repository_root_only(tmp_path: Path) -> None:
    """``python -m research.llm_study`` runs from a checkout; an installed dreamer_gym has no ``research``."""
    assert _python("import research.rule_choice; print('ok')", ROOT).stdout.strip() == "ok"
    proc = _python("import research", tmp_path)
    assert proc.returncode != 0 and "No module named 'research'" in proc.stderr


def test_the_library_rooms_import_from_anywhere(tmp_path: Path) -> None:
    proc = _python("import dreamer_gym.consolidators, dreamer_gym.studies.validity; print('ok')", tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_only_dreamer_gym_is_packaged() -> None:
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    assert find["include"] == ["dreamer_gym*"]


def test_the_wheel_holds_dreamer_gym_and_its_verifiers_name_only(tmp_path: Path) -> None:
    """What `pip install dreamer-gym` would put in site-packages: build the wheel and list its top level. Beside
    dreamer_gym, only dreamer_gym_verifiers: the module name `vf-eval dreamer-gym-verifiers` imports (a re-export
    of dreamer_gym.remote.verifiers_env; docs/verifiers.md)."""
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
    assert top == {"dreamer_gym", "dreamer_gym_verifiers", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}, top
    # the data the package reads at run time: tracks, the submission schema, the shipped pools and recipes
    for data in ("dreamer_gym/data/tracks/scienceworld.yaml", "dreamer_gym/data/tracks/tryout.yaml",
                 "dreamer_gym/data/references/tryout-oracle.json", "dreamer_gym/data/leaderboard/submission-v1.schema.json",
                 "dreamer_gym/data/scienceworld-heldout-v1.json.gz", "dreamer_gym/data/alfworld-gen-heldout-v1.json.gz",
                 "dreamer_gym/data/scienceworld-heldout-v0.json.gz", "dreamer_gym/data/configs/oplevel-cpu.yaml",
                 "dreamer_gym/data/scienceworld-jvm-classes.lst.gz"):
        assert data in names, data
    # the runnable examples the docs link to and tests/test_docs.py runs (python -m dreamer_gym.examples.NAME)
    shipped = {n.removeprefix("dreamer_gym/examples/") for n in names if n.startswith("dreamer_gym/examples/")}
    assert shipped == {p.name for p in (ROOT / "docs" / "examples").glob("*.py")}
    # the product's studies only (the lab's are in research/, not installed), and no recorded results: the data
    # is what the package reads at run time (pools, tracks, recipes, the schema, prompts), nothing a run wrote
    assert {n.rsplit("/", 1)[1] for n in names if n.startswith("dreamer_gym/studies/")} == {
        "__init__.py", "fixed_referee.py", "folds.py", "learnability.py", "power.py", "record_log.py", "region_context.py",
        "rule_tables.py", "topic_referee.py", "track_learnability.py", "track_power.py", "validity.py"}
    data = {n for n in names if not n.endswith(".py") and ".dist-info/" not in n}
    unexpected = sorted(n for n in data if not re.fullmatch(SHIPPED_DATA, n))
    assert data and not unexpected, unexpected


def test_the_shipped_examples_are_the_tested_ones() -> None:
    """dreamer_gym/examples is a link to docs/examples, not a copy: the files a wheel ships are the files the docs
    link to and tests/test_docs.py runs, so the two cannot drift apart."""
    link = ROOT / "dreamer_gym" / "examples"
    assert link.is_symlink() and link.resolve() == (ROOT / "docs" / "examples").resolve()
    assert not (link / "__init__.py").exists()  # test_docs runs every *.py there as an example
