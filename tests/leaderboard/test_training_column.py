"""What training cost goes on the board beside a trained row: read from the checkpoint's run, checked by the
submission schema, shown in its own column; and the op rules are rows of the board like the other fixed rules."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from dreamer_gym.consolidators import make_consolidator
from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard.board import build_board, load_results, table_rows
from dreamer_gym.leaderboard.rows import builtin_rule
from dreamer_gym.leaderboard.submission import SubmissionError
from dreamer_gym.leaderboard.validate import check_schema
from dreamer_gym.training.logs import training_record

ROOT = Path(__file__).parent.parent.parent
COLUMN = "training: steps, commits, wall, hardware"


def run_dir(tmp_path: Path, steps: list[dict]) -> Path:
    run = tmp_path / "run"
    (run / "checkpoint-2").mkdir(parents=True)
    (run / "config.yaml").write_text("regions_per_step: 4\ngroup_size: 8\n")
    (run / "log.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    return run / "checkpoint-2"


def test_a_training_record_counts_the_checkpoints_steps_commits_and_seconds(tmp_path: Path) -> None:
    steps = [{"step": 1, "seconds_play": 10.0, "seconds_update": 1.0}, {"step": 1, "seconds_play": 20.0},  # resumed
             {"step": 2, "seconds": {"generation": 5.0, "update": 2.5}}, {"step": 3, "seconds_play": 99.0}]
    got = training_record(run_dir(tmp_path, steps), "2 CPU cores")
    assert got == {"steps": 2, "commits": 2 * 4 * 8, "wall_s": 27.5, "hardware": "2 CPU cores"}
    with pytest.raises(ConfigError, match="holds 1 of the 2 steps"):
        training_record(run_dir(tmp_path / "short", steps[:1]), "x")
    with pytest.raises(ConfigError, match="RUN/checkpoint-N"):
        training_record(tmp_path, "x")


@pytest.fixture(scope="module")
def submission() -> dict:
    return json.loads((ROOT / "leaderboards" / "submissions" / "oplevel-windows-seed0.json").read_text())


def test_the_schema_takes_a_training_block_and_names_a_bad_one(submission: dict) -> None:
    data = copy.deepcopy(submission)
    data["consolidator"]["training"] = {"steps": 10, "commits": 320, "wall_s": 394.6, "hardware": "2 CPU cores"}
    check_schema(data)
    data["consolidator"]["training"]["commits"] = -1
    with pytest.raises(SubmissionError, match="commits"):
        check_schema(data)


def test_the_board_shows_each_submitters_training(submission: dict) -> None:
    """On a board of the trained row, an untrained one and the two anchors (every row of the committed board would
    only add bootstrap replicates)."""
    rows = ("oplevel-windows-seed0", "dedupe", "empty", "oracle")
    results = [r for r in load_results(ROOT / "leaderboards" / "results")["scienceworld"] if r["tier"] == "re-scored"
               and r["consolidator"]["name"] in rows]
    assert len(results) == len(rows)
    trained = next(r for r in results if r["consolidator"]["name"] == "oplevel-windows-seed0")
    trained["consolidator"]["training"] = {"steps": 10, "commits": 320, "wall_s": 394.6, "hardware": "2 CPU cores"}
    header, cells = table_rows(build_board("scienceworld", results))
    row = next(c for c in cells if c[1] == "oplevel-windows-seed0")
    assert row[header.index(COLUMN)] == "10 steps, 320 commits, 7 min, 2 CPU cores"
    assert next(c for c in cells if c[1] == "dedupe")[header.index(COLUMN)] == ""


def test_op_rules_are_consolidators_and_fixed_rows() -> None:
    assert make_consolidator("rule:merge-all").name == "merge-all"
    with pytest.raises(ConfigError, match="rule:NAME"):
        make_consolidator("rule:merge-everything")
    block = {"name": "rule:procedures-only", "kind": "fixed", "config": {"consolidator": "rule:procedures-only"}}
    assert builtin_rule(block) == "rule:procedures-only"
