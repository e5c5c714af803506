"""The latency suite's small pool, shared by the service tests that need no simulator."""
from __future__ import annotations

from pathlib import Path

import pytest

from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.pool import build_pool
from dreamer_gym.suites import get_suite_spec, make_suite


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> ConsolidationConfig:
    pool = build_pool(make_suite("latency", latency_s=0.0), get_suite_spec("latency").families, seeds=(0,),
                      eval_variations=4, gold_variations=2)
    pool.save(path := Path(tmp_path_factory.mktemp("latency")) / "latency-v0.json.gz")
    return ConsolidationConfig(suite="latency", pool=str(path), eval_in_family=3, eval_other=1, service="inprocess")
