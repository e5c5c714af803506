"""`dreamer-gym leaderboard columns`: a committed row's reported columns recomputed from its submission, never from
another's banks, and the committed files already current (so the board's verdicts are the rule's, not stale)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from dreamer_gym.leaderboard.columns import refresh_columns

ROOT = Path(__file__).resolve().parents[2]
BOARD = ROOT / "leaderboards"


def test_a_results_file_without_its_verdict_is_judged_from_its_own_submission(tmp_path: Path) -> None:
    results, submissions = tmp_path / "results" / "miniwob", tmp_path / "submissions"
    results.mkdir(parents=True)
    submissions.mkdir()
    for name in ("dedupe-miniwob", "oracle-miniwob"):
        shutil.copy(BOARD / "submissions" / f"{name}.json", submissions)
    committed = json.loads((BOARD / "results" / "miniwob" / "dedupe.json").read_text())
    (results / "dedupe.json").write_text(json.dumps({k: v for k, v in committed.items() if k != "review"}))
    (results / "keep-all.json").write_text((BOARD / "results" / "miniwob" / "keep-all.json").read_text())

    done = refresh_columns(tmp_path / "results", submissions)

    assert done.changed == [results / "dedupe.json"]
    assert json.loads((results / "dedupe.json").read_text())["review"] == committed["review"]
    [(skipped, why)] = done.skipped  # keep-all's submission is not in the folder: left as it is, and said
    assert skipped == results / "keep-all.json" and "no submission with sha256" in why
    again = refresh_columns(tmp_path / "results", submissions)
    assert again.changed == [] and again.unchanged == [results / "dedupe.json"]


def test_every_committed_current_row_carries_a_verdict() -> None:
    for path in sorted((BOARD / "results").glob("*/*.json")):
        record = json.loads(path.read_text())
        assert isinstance(record.get("review"), dict) and "needs_review" in record["review"], path
