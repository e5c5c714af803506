"""The checks moved up to ``dreamer_gym.testing`` (issue 28): the old paths still serve them, with a warning,
until 0.3; and nothing below ``testing`` imports it (the rooms it checks load without it)."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import dreamer_gym.testing

OLD_PATHS = [
    ("dreamer_gym.suites", "check_suite"), ("dreamer_gym.suites.check", "SuiteCheckError"),
    ("dreamer_gym.consolidators", "check_consolidator"), ("dreamer_gym.consolidators.check", "ConsolidatorReport"),
    ("dreamer_gym.evaluation", "check_executor"), ("dreamer_gym.evaluation.check", "ExecutorCheckError"),
]


@pytest.mark.parametrize(("module", "name"), OLD_PATHS, ids=[f"{m}.{n}" for m, n in OLD_PATHS])
def test_an_old_path_still_works_and_warns(module: str, name: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"{module}.* moved to dreamer_gym\.testing.*import {name} from there"):
        moved = getattr(importlib.import_module(module), name)
    assert moved is getattr(dreamer_gym.testing, name)


def test_the_checked_rooms_load_without_testing_and_star_imports_do_not_warn() -> None:
    code = ("import sys, warnings\nwarnings.simplefilter('error')\n"
            "import dreamer_gym, dreamer_gym.suites, dreamer_gym.consolidators, dreamer_gym.evaluation, dreamer_gym.agents\n"
            "import dreamer_gym.llm, dreamer_gym.service\n"
            "from dreamer_gym.suites import *\nfrom dreamer_gym.consolidators import *\nfrom dreamer_gym.evaluation import *\n"
            "assert 'dreamer_gym.testing' not in sys.modules, 'a checked room imported dreamer_gym.testing'\n"
            "import dreamer_gym.suites.registry, dreamer_gym.consolidators.registry\nprint('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
