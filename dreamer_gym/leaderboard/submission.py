"""Leaderboard submissions as data: what a consolidator committed on a track, not what it says it scored.

A submission (schema ``dreamer_gym/data/leaderboard/submission-v1.schema.json``) holds, per track and
region, the new region the consolidator committed (entries with provenance), its tool-call counts and the
scores it claims. The board never trusts the claims: :mod:`dreamer_gym.leaderboard.validate` checks the
data and re-scores every region. :func:`build_submission` writes one from a track run.
"""
from __future__ import annotations

import json
import platform
from importlib import metadata, resources
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dreamer_gym.leaderboard.intake import SubmissionError, read_json
from dreamer_gym.leaderboard.runner import TrackResult, run_track
from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION, Track

SCHEMA_VERSION = 1
KINDS = ("contender", "fixed", "reference")
# the versions a submission records: the simulators and learning stack that could change a score
RECORDED_PACKAGES = ("gymnasium", "numpy", "scienceworld", "alfworld", "textworld", "browsergym-core", "torch",
                     "transformers", "trl", "stable-baselines3", "sb3-contrib", "vllm")


def schema() -> dict[str, Any]:
    path = resources.files("dreamer_gym") / "data" / "leaderboard" / f"submission-v{SCHEMA_VERSION}.schema.json"
    return json.loads(path.read_text())


def references_dir() -> Path:
    """``dreamer_gym/data/references``: the reference submissions the package ships (the try-out track's oracle), so
    the copy check of ``leaderboard validate`` has its reference from a wheel, with no checkout."""
    return Path(str(resources.files("dreamer_gym") / "data" / "references"))


def shipped_references() -> list[tuple[Path, dict[str, Any]]]:
    """Every shipped reference submission, as ``(path, data)``, sorted by path."""
    return [(path, load_submission(path)) for path in sorted(references_dir().glob("*.json"))]


def frozen_fields(track: Track) -> dict[str, Any]:
    """Every field that defines the track's measurement (all but its prose description), JSON-shaped."""
    out: dict[str, Any] = {}
    for name, value in track.data().items():
        if name == "description":
            continue
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def package_versions() -> dict[str, str]:
    out = {}
    for name in RECORDED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def consolidator_block(name: str, *, kind: str, link: str = "", config: dict[str, Any] | None = None,
                       trained_on: list[str] | None = None, llm: dict[str, str] | None = None,
                       training: dict[str, Any] | None = None) -> dict[str, Any]:
    if kind not in KINDS:
        raise SubmissionError(f"`consolidator.kind` must be one of {list(KINDS)}, got {kind!r}")
    block: dict[str, Any] = {"name": name, "link": link, "config": dict(config or {}),
                             "trained_on": list(trained_on or []), "kind": kind}
    if llm is not None:
        block["llm"] = dict(llm)
    if training is not None:  # what training cost (steps, commits, wall time, hardware): the board's columns
        block["training"] = dict(training)
    return block


class CallRecorder:
    """A consolidator that sends its wrapped one's tool calls unchanged and keeps them, one list per region:
    a submission's call log. The board replays the calls themselves, so the env counts tool calls and invalid
    calls at validation (a count the submitter typed would be a claim)."""

    def __init__(self, consolidator: Any) -> None:
        self.consolidator = consolidator
        self.runs: list[list[str]] = []

    def __getattr__(self, name: str) -> Any:  # name, llm_info, temperature...: the wrapped consolidator's
        return getattr(self.__dict__["consolidator"], name)

    def actions(self, env: Any, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        log: list[str] = []
        self.runs.append(log)
        calls = self.consolidator.actions(env, obs, info)
        send = getattr(calls, "send", None)
        try:
            action = next(calls)
            while True:
                log.append(action)
                obs, info = yield action
                action = send((obs, info)) if send is not None else next(calls)
        except StopIteration:
            return


def run_for_submission(track: Track, consolidator: Any, **kwargs: Any) -> TrackResult:
    """:func:`~dreamer_gym.leaderboard.run_track` with each region's tool calls kept in its commit
    (``commits[i]["calls"]``), which :func:`track_block` writes into the submission."""
    recorder = CallRecorder(consolidator)
    result = run_track(track, recorder, **kwargs)
    for commit, calls in zip(result.commits, recorder.runs):
        commit["calls"] = list(calls)
    return result


def track_block(track: Track, result: TrackResult) -> dict[str, Any]:
    """One track's part of a submission, from a :func:`run_for_submission` result (a plain
    :func:`~dreamer_gym.leaderboard.run_track` result has no call log: validation refuses it)."""
    if len(result.commits) != len(result.records):
        raise SubmissionError(f"track {track.name!r}: {len(result.commits)} commits but {len(result.records)} scored "
                              "regions; run the track with dreamer_gym.leaderboard.run_track")
    regions = []
    for commit, record in zip(result.commits, result.records):
        regions.append({
            **{k: commit[k] for k in ("bank", "family", "seed", "emitted", "tool_calls", "invalid_calls", "calls")
               if k in commit},
            "claimed": {"reward": record["reward"], "score_before": record["score_before"],
                        "score_after": record["score_after"], "tokens_after": record["size_after"]["tokens"]},
        })
    return {"track": track.name, "protocol_version": track.protocol_version, "frozen": frozen_fields(track),
            "regions": regions, "claimed": {"score": result.summary["score"]}}


def build_submission(consolidator: dict[str, Any], tracks: list[tuple[Track, TrackResult]]) -> dict[str, Any]:
    """A submission of ``consolidator`` (see :func:`consolidator_block`) on each ``(track, result)``."""
    import dreamer_gym

    return {
        "schema_version": SCHEMA_VERSION,
        "consolidator": consolidator,
        "versions": {"package": dreamer_gym.__version__, "protocol": PROTOCOL_VERSION,
                     "python": platform.python_version(), "packages": package_versions()},
        "tracks": [track_block(track, result) for track, result in tracks],
    }


def dumps(data: dict[str, Any]) -> str:
    """The canonical text of a submission or a results file: sorted keys, so equal data is equal bytes."""
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def load_submission(path: str | Path) -> dict[str, Any]:
    """Parse ``path`` within the board's bounds (:mod:`~dreamer_gym.leaderboard.intake`: size, UTF-8, JSON,
    depth, finite numbers); each failure is a one-line :class:`SubmissionError`."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise SubmissionError(f"{path}: a submission is a JSON object, got {type(data).__name__}")
    return data
