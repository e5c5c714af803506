"""Running a consolidator on a track: the TEST scores come only from here, once, when the run ends.

The run builds a *withholding* reward service (its own process), an env on the track's settings with
every field frozen (budgets included), and visits each region with a fixed seed, so every submission is
scored on the same regions and episodes (paired comparisons). The env's commits pay 0 and show no score;
the service hands its ledger out once, through :meth:`~dreamer_gym.service.RewardService.finish`, after
the last region. The service opens each region once, and the run checks that the ledger holds exactly
one commit per region, in the order the runner visited them: a commit made outside the runner (a policy
that reached the service itself) voids the run. ``episode_secret`` (verification) makes the service derive
the evaluation draws from the fixed seeds under a secret, so they cannot be predicted from the track file.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from dreamer_gym.consolidators.base import Consolidator, run_episode
from dreamer_gym.contract.frozen import check_frozen
from dreamer_gym.errors import RewardServiceError
from dreamer_gym.leaderboard.tracks import Track, TransferTrack
from dreamer_gym.service import make_reward_service

# privileged references (they read the pool's TRAIN gold paths, see consolidators/oracle.py): reported,
# never ranked with contenders
REFERENCES: frozenset[str] = frozenset({"oracle", "prose-oracle", "wrong-procedures", "constant", "bait",
                                        "constant-train", "constant-transfer"})


@dataclass
class TrackResult:
    """One consolidator on one track: per-region records (the service's ledger) and their summary."""

    track: str
    protocol_version: int
    consolidator: str
    reference: bool
    records: list[dict[str, Any]]
    summary: dict[str, Any] = field(default_factory=dict)
    # what the consolidator committed per region, in the order of ``records``: the bank, family and reset
    # seed of the region, the new region (entry dicts with provenance) and the tool calls it took; a
    # leaderboard submission is made of these (dreamer_gym/leaderboard/submission.py)
    commits: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarise(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The track score (mean reward per region) and what it is made of, overall and per family."""
    def block(rs: Sequence[dict[str, Any]]) -> dict[str, float]:
        own_after = [e["after"] for r in rs for e in r["episodes"] if e["in_family"]]
        return {
            "score": float(np.mean([r["reward"] for r in rs])),
            "score_after": float(np.mean([r["score_after"] for r in rs])),
            "score_before": float(np.mean([r["score_before"] for r in rs])),
            "in_family_after": float(np.mean(own_after)) if own_after else float("nan"),
            "tokens_before": float(np.mean([r["size_before"]["tokens"] for r in rs])),
            "tokens_after": float(np.mean([r["size_after"]["tokens"] for r in rs])),
            "regions": len(rs),
        }

    by_family: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_family[r["family"]].append(r)
    out: dict[str, Any] = block(records) if records else {"regions": 0}
    out["per_family"] = {f: block(rs) for f, rs in sorted(by_family.items())}
    out["episode_errors"] = sum(len(r["episode_errors"]) for r in records)
    return out


def run_track(track: Track, consolidator: Consolidator, *, name: str | None = None, service: str = "process",
              progress: bool = True, episode_secret: str | bytes | None = None,
              evaluation: dict[str, int] | None = None, **free: Any) -> TrackResult:
    """Run ``consolidator`` on every region of ``track``; ``free``: ``workers``, ``executor``, ``store_path``.

    ``service="inprocess"`` is for tests of the machinery only: it isolates nothing. ``episode_secret``: the
    service derives each region's evaluation draw from its seed under this secret (``None``: from the seed
    alone, the track's published episodes). ``evaluation``, if given, receives the service's evaluation counts
    (``hits``: episodes served by the cache, ``misses``: episodes played), what re-scoring costs.
    """
    from tqdm.auto import tqdm

    from dreamer_gym.envs.consolidation import ConsolidationEnv

    label = name or getattr(consolidator, "name", type(consolidator).__name__)
    kwargs = track.env_kwargs(**free)
    config = track.config(**free)
    check_frozen(config, kwargs, freeze_budgets=True, what=f"track {track.name!r}")
    reward_service = make_reward_service(service, config, withhold=True, episode_secret=episode_secret)
    commits: list[dict[str, Any]] = []
    try:
        env = ConsolidationEnv(**kwargs, reward_service=reward_service)
        try:
            track.check_pool(env.pool)  # a window track: its windows are the pool's, holding its families
            for i, (bank, family) in enumerate(tqdm(track.regions(), desc=f"track {track.name}", disable=not progress)):
                info = run_episode(env, consolidator, seed=track.seed + i, options=track.reset_options(bank, family))
                commits.append({"bank": bank, "family": family, "seed": track.seed + i, "emitted": info["emitted"],
                                "tool_calls": config.max_tool_calls - int(info["tool_calls_left"]),
                                "invalid_calls": int(info["invalid_calls"])})
        finally:
            env.close()
        ledger = reward_service.finish()
        if evaluation is not None:
            evaluation.update(reward_service.stats())
    finally:
        reward_service.close()
    check_ledger(ledger, commits)
    return TrackResult(track.name, track.protocol_version, label, label in REFERENCES, ledger, summarise(ledger),
                       commits)


def check_ledger(ledger: Sequence[dict[str, Any]], commits: Sequence[dict[str, Any]]) -> None:
    """One ledger record per region the runner visited, in its order; anything else means a commit was made
    outside the runner (a policy that reached the service), which voids the run."""
    got = [(r.get("bank_index"), r.get("family")) for r in ledger]
    want = [(c["bank"], c["family"]) for c in commits]
    if got != want:
        raise RewardServiceError(f"the track's ledger holds {len(got)} commit(s) for the {len(want)} region(s) the "
                                 f"runner visited (first difference: {_first_difference(got, want)}): a commit was made "
                                 "outside the runner, so the run is void")


def _first_difference(got: list[Any], want: list[Any]) -> str:
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"record {i} is {g}, the runner's region {i} is {w}"
    return f"record {min(len(got), len(want))} is {'extra' if len(got) > len(want) else 'missing'}"


def run_transfer(track: TransferTrack, consolidator: Consolidator, *, name: str | None = None,
                 progress: bool = True, **free: Any) -> dict[str, Any]:
    """Each member track in turn; a member this machine cannot run is recorded with the reason."""
    from dreamer_gym.errors import DreamerGymError

    out: dict[str, Any] = {"track": track.name, "protocol_version": track.protocol_version, "members": {}}
    held_out = []
    for role, member in track.tracks():
        try:
            result = run_track(member, consolidator, name=name, progress=progress, **free)
        except DreamerGymError as exc:
            out["members"][member.name] = {"role": role, "unavailable": f"{type(exc).__name__}: {exc}"}
            continue
        out["members"][member.name] = {"role": role, **result.to_dict()}
        if role == "held out":
            held_out.append(result.summary["score"])
    out["score"] = float(np.mean(held_out)) if held_out else float("nan")
    return out
