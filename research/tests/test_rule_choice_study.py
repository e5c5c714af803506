"""research/rule_choice.py on a real env: the fixed op assignments it compares, played on the same reset."""
from __future__ import annotations

from pathlib import Path


def test_rule_choice_study_plays_each_rule_on_the_same_reset(tmp_path: Path) -> None:
    """Per region, each fixed assignment is committed on the same reset; the per-region choice is the better of
    merge-everything and consensus, so it is never below either."""
    from dreamer_gym.methods.oplevel.config import OpLevelConfig
    from dreamer_gym.methods.oplevel.trainer import OpPolicy, save_policy
    from research.rule_choice import run

    save_policy(OpPolicy(), OpLevelConfig(output_dir=str(tmp_path)), 0, tmp_path / "checkpoint-0")
    result = run(str(tmp_path / "checkpoint-0"), [0, 4], progress=False, eval_in_family=1, eval_other=0)
    rows, summary = result["regions"], result["summary"]
    assert [r["seed"] for r in rows] == [0, 4] and [r["family"] for r in rows] == ["grow-plant", "use-thermometer"]
    assert all(r["keep-all"] == 0.0 and r["keep-all_tokens"] > r["consensus_tokens"] for r in rows)
    assert summary["per_region_choice"] >= max(summary["merge-all"]["reward"], summary["consensus"]["reward"]) - 1e-12
    assert summary["consensus_beats_merge_all"] + summary["merge_all_beats_consensus"] <= 2
