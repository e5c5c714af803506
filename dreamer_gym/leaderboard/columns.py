"""Re-judging committed rows: a results file's reported columns recomputed when their rule changes, scores untouched.

A results file's ``grounding``, ``reader_similarity`` and ``review`` (:func:`~dreamer_gym.leaderboard.validate.
reported_columns`) are pure text over the track's public pool and the reference submissions: no simulator. When
their rule changes (a new reader, new thresholds), re-validating every row would replay thousands of episodes to
reproduce scores that cannot move; :func:`refresh_columns` instead finds each re-scored results file's submission
(by its ``submission_sha256``, never by name), recomputes the three columns against the other reference
submissions exactly as ``validate`` does, and rewrites those keys only. A results file whose submission is not in
the folder is left as it is and listed, so a row never gets a verdict from someone else's banks.

Verified records are not refreshed here: their references are the oracle's banks on the verification's fresh pool,
which lives in its work dir; re-run ``leaderboard verify`` instead.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dreamer_gym.leaderboard.submission import dumps, load_submission
from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION, load_track
from dreamer_gym.leaderboard.validate import reported_columns, submission_digest

COLUMNS = ("grounding", "reader_similarity", "review")


@dataclass
class Refreshed:
    """What :func:`refresh_columns` did: files rewritten, files whose columns were already current, and files it
    could not refresh with the reason."""

    changed: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def refresh_columns(results_dir: Path, submissions_dir: Path) -> Refreshed:
    """Recompute the reported columns of every current-protocol re-scored results file under ``results_dir``
    (``TRACK/NAME.json``) from its submission in ``submissions_dir``; rewrite only the files whose columns move."""
    submissions = {submission_digest(data): data for data in
                   (load_submission(p) for p in sorted(Path(submissions_dir).glob("*.json")))}
    references = [data for data in submissions.values() if data["consolidator"]["kind"] == "reference"]
    out = Refreshed()
    for path in sorted(Path(results_dir).glob("*/*.json")):
        record = json.loads(path.read_text())
        if record.get("tier") != "re-scored" or record.get("protocol_version") != PROTOCOL_VERSION:
            out.skipped.append((path, f"tier {record.get('tier')!r}, protocol {record.get('protocol_version')}"))
            continue
        data = submissions.get(record["submission_sha256"])
        if data is None:
            out.skipped.append((path, f"no submission with sha256 {record['submission_sha256'][:12]} in "
                                      f"{submissions_dir}"))
            continue
        columns: dict[str, Any] = reported_columns(data, load_track(record["track"]), references)
        if all(record.get(k) == v for k, v in columns.items()):
            out.unchanged.append(path)
            continue
        path.write_text(dumps({**record, **columns}))
        out.changed.append(path)
    return out
