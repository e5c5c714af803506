"""The reward separates good consolidation from bad (small CI version; the full study is `heavy`)."""
from __future__ import annotations

import pytest

from dreamer_gym.studies.validity import ValidityConfig, run


@pytest.mark.jvm
def test_reward_orders_oracle_raw_empty_on_a_small_study() -> None:
    config = ValidityConfig(
        families=("find-non-living-thing", "grow-plant", "power-component"),
        seeds=(0,),
        episodes_per_family=3,
        policies=("oracle", "keep-all", "empty", "prose-oracle"),
        bootstrap_resamples=500,
    )
    summary = run(config, progress=False)
    table = summary["table"]
    assert table["oracle"]["all"] > table["keep-all"]["all"] + 10
    assert table["keep-all"]["all"] >= table["empty"]["all"]
    assert table["oracle"]["tokens"] < table["keep-all"]["tokens"] / 5
    # content, not format: the prose rephrasing scores like the original
    assert abs(table["prose-oracle"]["all"] - table["oracle"]["all"]) <= 5


@pytest.mark.heavy
def test_full_validity_study_holds(tmp_path) -> None:
    summary = run(ValidityConfig(), tmp_path, progress=False)
    failed = [(c["a"], c["b"]) for c in summary["comparisons"] if not c["holds"]]
    assert not failed, failed
