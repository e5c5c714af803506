"""Validation that re-scores: a submission's claims count for nothing until its banks score the same here.

:func:`validate` checks, in this order, and rejects at the first failure with a
:class:`~dreamer_gym.leaderboard.submission.SubmissionError` that names the field (a JSON path) and what was
expected:

1. the schema (``jsonschema``, draft 2020-12);
2. per track: a shipped track of this package's protocol (an older protocol is *stale*), and every frozen field
   as the track freezes it;
3. the regions: exactly the track's (bank, family) regions, in its order, each with the reset seed the track
   gives it;
4. per region, the new region: kept entries unchanged from the region, new entries whose ids match their
   content, of the region's family, with provenance inside the region (trajectories its entries cite, step
   ranges inside them), within the budgets (new entries, tokens per entry, tool calls), with its call log;
   no new entry is a privileged reference's (the oracle's banks are public), whatever the submission's kind
   or the entries' tags; the row's name and kind (:mod:`~dreamer_gym.leaderboard.rows`);
5. the re-score: every region's calls are replayed through the track's own env (its tools check everything
   again and count the tool calls and invalid calls) and scored by a fresh withholding reward service on the
   track's TEST episodes; a ``fixed`` row (or a package reference) is instead re-run from the package's own
   rule. Banks or counts the run does not reproduce, and a claimed reward, score or size the re-score does
   not, are rejected with both values.

Bounds on the input itself (size, UTF-8, depth, finite numbers) come first: :mod:`~dreamer_gym.leaderboard.intake`.

What passes becomes a results file (:func:`results_record`), the only thing boards are rendered from.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dreamer_gym.consolidators.base import call
from dreamer_gym.contract.filing import filing_families
from dreamer_gym.envs.tools import CHARS_PER_TOKEN
from dreamer_gym.errors import ConfigError, EvaluationFailed
from dreamer_gym.leaderboard.copy_check import NEAR_COPY as NEAR_COPY  # re-exported
from dreamer_gym.leaderboard.copy_check import check_not_a_reference_copy
from dreamer_gym.leaderboard.grounding import public_trajectories, track_grounding
from dreamer_gym.leaderboard.intake import check_clean
from dreamer_gym.leaderboard.rescore_cache import cached_free
from dreamer_gym.leaderboard.review import judge
from dreamer_gym.leaderboard.rows import builtin_rule
from dreamer_gym.leaderboard.runner import TrackResult, run_track, summarise
from dreamer_gym.leaderboard.similarity import reader_similarity, reference_blocks
from dreamer_gym.leaderboard.submission import SubmissionError, dumps, frozen_fields, run_for_submission, schema
from dreamer_gym.leaderboard.tracks import PROTOCOL_VERSION, Track, TransferTrack, load_track, track_names
from dreamer_gym.memory import MemoryEntry, bank_at, count_tokens

# claims are re-scored on the same simulator and episodes: equal up to float printing
TOLERANCE = 1e-6
TIERS = ("verified", "re-scored")


class StaleSubmission(SubmissionError):
    """A submission of an older protocol: listed as stale, never re-scored under the new rules."""


@dataclass(frozen=True)
class Checked:
    """One track block that passed the data checks (1-4), ready to re-score."""

    index: int
    track: Track
    block: dict[str, Any]


def _path(parts: Sequence[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(the submission)"


def check_schema(data: Any) -> None:
    """The submission's shape; the error names the deepest field that is wrong."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(schema()).iter_errors(data))
    if error is not None:
        raise SubmissionError(f"`{_path(error.absolute_path)}`: {error.message} (schema "
                              f"submission-v{data.get('schema_version', '?') if isinstance(data, dict) else '?'})")


def find_track(name: str, extra: Mapping[str, Track] | None = None) -> Track | TransferTrack:
    """A shipped track, or one of ``extra`` (tracks a maintainer or a test defines beside the shipped ones)."""
    if extra and name in extra:
        return extra[name]
    if name not in track_names():
        raise ConfigError(f"unknown track {name!r}")
    return load_track(name)


def submitted_track(i: int, name: str, extra: Mapping[str, Track] | None = None) -> Track | TransferTrack:
    """The track ``tracks[i]`` names: shipped, registered, or one of ``extra`` (``validate --track FILE``)."""
    try:
        return find_track(name, extra)
    except ConfigError:
        raise SubmissionError(f"`tracks[{i}].track`: unknown track {name!r} (known: "
                              f"{sorted({*track_names(), *(extra or {})})}); a submission made on a track file is "
                              "validated with `--track FILE`, that file") from None


def check_track(i: int, block: dict[str, Any], extra: Mapping[str, Track] | None = None) -> Track:
    """Known track, current protocol, frozen fields as frozen, regions and seeds as the track visits them."""
    where = f"tracks[{i}]"
    track = submitted_track(i, block["track"], extra)
    if isinstance(track, TransferTrack):
        raise SubmissionError(f"`{where}.track`: {track.name!r} is a transfer track; submit each of its member "
                              f"tracks ({[name for _, name in track.members]}), its score is theirs")
    if block["protocol_version"] != PROTOCOL_VERSION:
        raise StaleSubmission(f"`{where}.protocol_version`: {block['protocol_version']} is stale; this package "
                              f"scores protocol {PROTOCOL_VERSION}: run `dreamer-gym leaderboard submit` again")
    expected, given = frozen_fields(track), block["frozen"]
    for name in sorted(set(expected) | set(given)):
        if name not in given:
            raise SubmissionError(f"`{where}.frozen.{name}`: missing; track {track.name!r} freezes it at {expected[name]!r}")
        if name not in expected:
            raise SubmissionError(f"`{where}.frozen.{name}`: not a field of track {track.name!r}")
        if given[name] != expected[name]:
            raise SubmissionError(f"`{where}.frozen.{name}`: changed frozen field: the submission has {given[name]!r}, "
                                  f"track {track.name!r} (protocol {PROTOCOL_VERSION}) freezes {expected[name]!r}")
    want = [(b, f) for b, f in track.regions()]
    got = [(r["bank"], r["family"]) for r in block["regions"]]
    if got != want:
        missing = [w for w in want if w not in got]
        extra = [g for g in got if g not in want]
        detail = (f"missing {missing}" if missing else "") + ("; " if missing and extra else "") + \
                 (f"not on the track {extra}" if extra else "")
        raise SubmissionError(f"`{where}.regions`: wrong regions: {detail or 'the order differs'}; track "
                              f"{track.name!r} visits (bank, family) {want} in this order")
    for j, region in enumerate(block["regions"]):
        if region["seed"] != track.seed + j:
            raise SubmissionError(f"`{where}.regions[{j}].seed`: the track resets this region with seed "
                                  f"{track.seed + j}, the submission has {region['seed']}")
    return track


def check_regions(i: int, track: Track, block: dict[str, Any]) -> list[frozenset[str]]:
    """Every new region against its region of the track's pool: provenance, ids, budgets and a call log.
    Returns each region's own entry ids (what a kept entry is)."""
    from dreamer_gym.pool import load_or_build_pool

    config = track.config()
    pool = load_or_build_pool(config.pool, config.suite, config.pool_hash, progress=False)
    region_ids = []
    for j, region in enumerate(block["regions"]):
        where = f"tracks[{i}].regions[{j}]"
        bank = bank_at(pool.banks[region["bank"]], region["family"])  # a window's: the bank when it closed
        selected = pool.region_scheme.select(bank, region["family"], pool.trajectories, config.max_region_entries)
        ids = selected.entry_ids
        may_file = filing_families(bank, region["family"], selected, config.window_own_families)
        entries = {e: bank.get(e) for e in ids}
        region_ids.append(frozenset(entries))
        if "calls" not in region:
            raise SubmissionError(f"`{where}.calls`: missing; the board replays a region's tool calls to count its "
                                  "tool calls and invalid calls: `dreamer-gym leaderboard submit` records them "
                                  "(submit again)")
        if len(region["calls"]) > config.max_tool_calls:
            raise SubmissionError(f"`{where}.calls`: over budget: {len(region['calls'])} tool calls; the track "
                                  f"allows max_tool_calls={config.max_tool_calls}")
        linked = {p.trajectory_id for e in entries.values() for p in e.provenance}  # type: ignore[union-attr]
        if region["tool_calls"] > config.max_tool_calls:
            raise SubmissionError(f"`{where}.tool_calls`: over budget: {region['tool_calls']} tool calls; the track "
                                  f"allows max_tool_calls={config.max_tool_calls}")
        if region["invalid_calls"] > region["tool_calls"]:
            raise SubmissionError(f"`{where}.invalid_calls`: {region['invalid_calls']} invalid calls of "
                                  f"{region['tool_calls']} tool calls")
        seen: set[str] = set()
        new = 0
        for k, raw in enumerate(region["emitted"]):
            at = f"{where}.emitted[{k}]"
            if raw["id"] in seen:
                raise SubmissionError(f"`{at}.id`: entry {raw['id']} is emitted twice")
            seen.add(raw["id"])
            if raw["id"] in entries:
                kept = entries[raw["id"]].to_dict()  # type: ignore[union-attr]
                changed = sorted(key for key in raw if raw[key] != kept.get(key))
                if changed:
                    raise SubmissionError(f"`{at}`: kept entry {raw['id']} differs from the region's in {changed}; "
                                          "keep an entry as it is or emit a new one")
                continue
            new += 1
            entry = MemoryEntry.from_dict(raw)
            if entry.id != raw["id"]:
                raise SubmissionError(f"`{at}.id`: {raw['id']} is not this entry's content hash ({entry.id}): the "
                                      "entry is neither a region entry nor what its fields say")
            if raw["family"] not in may_file:
                raise SubmissionError(f"`{at}.family`: {raw['family']!r}; a new entry of this region is of family "
                                      f"{' or '.join(map(repr, sorted(may_file)))}")
            if raw["text"] != raw["text"].strip():
                raise SubmissionError(f"`{at}.text`: leading or trailing whitespace (the env's emit strips it)")
            tokens = count_tokens(raw["text"])
            if tokens > config.max_entry_tokens or len(raw["text"]) > config.max_entry_tokens * CHARS_PER_TOKEN:
                raise SubmissionError(f"`{at}.text`: over budget: {tokens} tokens ({len(raw['text'])} characters); the "
                                      f"track allows max_entry_tokens={config.max_entry_tokens}")
            if not raw["provenance"]:
                raise SubmissionError(f"`{at}.provenance`: empty; a new entry cites the region's evidence")
            for m, p in enumerate(raw["provenance"]):
                tid = p["trajectory_id"]
                if tid not in linked:
                    raise SubmissionError(f"`{at}.provenance[{m}]`: provenance outside the region: trajectory "
                                          f"{tid[:40]!r} is not cited by region (bank {region['bank']}, family "
                                          f"{region['family']!r})")
                steps = len(pool.trajectories[tid].steps)
                if not 0 <= p["start"] <= p["end"] < steps:
                    raise SubmissionError(f"`{at}.provenance[{m}]`: provenance outside the region: steps "
                                          f"[{p['start']}, {p['end']}] of a trajectory of {steps} steps")
        if new > config.max_emitted:
            raise SubmissionError(f"`{where}.emitted`: over budget: {new} new entries; the track allows "
                                  f"max_emitted={config.max_emitted}")
    return region_ids


class ReplayConsolidator:
    """Plays a submitted track block's new regions through the env's own tools, in order; what the tools
    refuse is a rejection. It reads nothing but the submission and the region listing."""

    name = "replay"

    def __init__(self, regions: Sequence[dict[str, Any]]) -> None:
        self._queue = list(regions)

    def actions(self, env: Any, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        region = self._queue.pop(0)
        if (info["bank"], info["family"]) != (region["bank"], region["family"]):
            raise SubmissionError(f"replay out of order: the env reset (bank {info['bank']}, family {info['family']!r}) "
                                  f"for the submission's (bank {region['bank']}, family {region['family']!r})")
        if "calls" in region:  # the submitted calls themselves: the env counts tool calls and invalid calls
            for action in region["calls"]:
                obs, info = yield action
            return
        region_ids = {e["id"] for e in info["region"]}
        run: list[str] = []
        for raw in region["emitted"]:
            if raw["id"] in region_ids:
                run.append(raw["id"])
                continue
            if run:
                obs, info = yield call("keep", ids=run)
                run = []
            obs, info = yield call("emit", kind=raw["kind"], text=raw["text"], provenance=raw["provenance"])
            if info["last_error"]:
                raise SubmissionError(f"region (bank {region['bank']}, family {region['family']!r}): the env refused "
                                      f"entry {raw['id']}: {info['last_error']}")
        if run:
            obs, info = yield call("keep", ids=run)
        replayed = [e["id"] for e in info["emitted"]]
        if replayed != [e["id"] for e in region["emitted"]]:
            raise SubmissionError(f"region (bank {region['bank']}, family {region['family']!r}): the replayed region "
                                  "differs from the submitted one")
        yield call("commit")


def rescore(track: Track, block: dict[str, Any], *, progress: bool = True, episode_secret: str | bytes | None = None,
            **free: Any) -> list[dict[str, Any]]:
    """Replay and score ``block``'s regions on ``track``; the records carry the submission's invalid calls.
    ``episode_secret``: the evaluation draws under a secret (verify's; see run_track)."""
    result = run_track(track, ReplayConsolidator(block["regions"]), name="replay", progress=progress,
                       episode_secret=episode_secret, **free)
    return reproduced(track, block, result, "the replay of the submitted calls")


def rerun(track: Track, block: dict[str, Any], rule: str, *, progress: bool = True,
          episode_secret: str | bytes | None = None, **free: Any) -> list[dict[str, Any]]:
    """Run the package's own ``rule`` on ``block``'s regions and score it: a ``fixed`` row (or a package
    reference) is accepted only where the rule's run commits the submitted banks with the submitted counts."""
    from dreamer_gym.consolidators import make_consolidator

    result = run_for_submission(track, make_consolidator(rule), name=rule, progress=progress,
                                episode_secret=episode_secret, **free)
    return reproduced(track, block, result, f"the package's {rule!r} rule, re-run,")


def reproduced(track: Track, block: dict[str, Any], result: TrackResult, what: str) -> list[dict[str, Any]]:
    """The records of a board run of ``block``'s regions, once its commits are the submitted ones: the same
    new regions, tool calls and invalid calls (counted by the env here, never taken from the submission)."""
    errors = [e for record in result.records for e in record.get("episode_errors", ())]
    if errors:  # the service raises first; this guards a service that records failures instead
        reasons = tuple(dict.fromkeys(errors))
        raise EvaluationFailed(f"the re-score of track {track.name!r} has {len(errors)} episode(s) that did not run "
                               f"({reasons[0]}); a board row is never computed from them", reasons)
    for j, (commit, region) in enumerate(zip(result.commits, block["regions"])):
        where = f"track {track.name!r}: `regions[{j}]"
        ran, given = [e["id"] for e in commit["emitted"]], [e["id"] for e in region["emitted"]]
        if ran != given:
            raise SubmissionError(f"{where}.emitted`: {what} commits entries {ran}, the submission lists {given} "
                                  f"(region bank {region['bank']}, family {region['family']!r})")
        for key in ("tool_calls", "invalid_calls"):
            if commit[key] != region[key]:
                raise SubmissionError(f"{where}.{key}`: the submission claims {region[key]}, {what} made "
                                      f"{commit[key]} (region bank {region['bank']}, family {region['family']!r})")
    # the ledger's reward already pays the env's own invalid-call count
    return [{**record, "tool_calls": commit["tool_calls"]} for record, commit in zip(result.records, result.commits)]


def compare_claims(i: int, block: dict[str, Any], records: Sequence[dict[str, Any]]) -> None:
    for j, (region, record) in enumerate(zip(block["regions"], records)):
        rescored = {"reward": record["reward"], "score_before": record["score_before"],
                    "score_after": record["score_after"], "tokens_after": record["size_after"]["tokens"]}
        for key, value in rescored.items():
            claim = region["claimed"][key]
            if not math.isclose(claim, value, rel_tol=0.0, abs_tol=TOLERANCE):
                raise SubmissionError(f"`tracks[{i}].regions[{j}].claimed.{key}`: claimed {claim!r}, re-scored "
                                      f"{value!r} (region bank {region['bank']}, family {region['family']!r})")
    score = summarise(records)["score"]
    claim = block["claimed"]["score"]
    if not math.isclose(claim, score, rel_tol=0.0, abs_tol=TOLERANCE):
        raise SubmissionError(f"`tracks[{i}].claimed.score`: claimed {claim!r}, re-scored {score!r}")


def check_data(data: Any, extra_tracks: Mapping[str, Track] | None = None,
               references: Sequence[dict[str, Any]] = ()) -> list[Checked]:
    """Checks 1-4 (no simulator): what :func:`validate` does before it re-scores. ``references``: the
    submissions of privileged reference rows, which no submission may copy (a reference's own submission is
    validated without itself among them)."""
    check_clean(data)
    check_schema(data)
    builtin_rule(data["consolidator"])
    checked = []
    for i, block in enumerate(data["tracks"]):
        track = check_track(i, block, extra_tracks)
        region_ids = check_regions(i, track, block)
        check_not_a_reference_copy(i, track, block, references, region_ids)  # whatever the claimed kind
        checked.append(Checked(i, track, block))
    names = [c.track.name for c in checked]
    if len(set(names)) != len(names):
        raise SubmissionError(f"`tracks`: a track appears twice ({names}); one block per track")
    return checked


def submission_digest(data: dict[str, Any]) -> str:
    return hashlib.sha256(dumps(data).encode()).hexdigest()


def results_record(data: dict[str, Any], track: Track, records: list[dict[str, Any]], tier: str,
                   verification: dict[str, Any] | None = None, references: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """A board row's data: who, on what, how checked, and the re-scored per-region records.

    Nothing in it depends on when or where it ran (no times, no paths), so re-scoring the same submission
    twice gives the same bytes (:func:`~dreamer_gym.leaderboard.submission.dumps`). Beside the scores, the
    :func:`reported_columns` against ``references`` (``grounding``, ``reader_similarity``, ``review``)."""
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")
    out = {
        "schema_version": 1,
        "tier": tier,
        "track": track.name,
        "protocol_version": track.protocol_version,
        "consolidator": data["consolidator"],
        "versions": data["versions"],
        "submission_sha256": submission_digest(data),
        "records": records,
        "summary": summarise(records),
    }
    out.update(reported_columns(data, track, references))
    if verification is not None:
        out["verification"] = verification
    return out


def reported_columns(data: dict[str, Any], track: Track, references: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """What a results record says of ``data``'s banks on ``track`` beside its scores, pure text over the track's
    pool (a verification track's is its fresh pool, and its ``references`` the oracle's banks on it):
    ``grounding`` and ``reader_similarity``, the reported columns, and ``review``, the needs-review verdict on
    them region by region (:func:`~dreamer_gym.leaderboard.review.judge`)."""
    block = next((b for b in data["tracks"] if b["track"] == track.name), data["tracks"][0])
    trajectories, suite, memo = public_trajectories(track), track.config().suite, {}  # memo: each entry once
    refs = reference_blocks(track.name, references, data)
    return {"grounding": track_grounding(track, block, trajectories, memo),
            "reader_similarity": reader_similarity(block["regions"], refs, suite),
            "review": judge(block["regions"], refs, trajectories, suite,
                            reference=data["consolidator"]["kind"] == "reference", memo=memo)}


def validate(data: Any, *, extra_tracks: Mapping[str, Track] | None = None, references: Sequence[dict[str, Any]] = (),
             progress: bool = True, timings: dict[str, float] | None = None, cache: Path | None = None,
             **free: Any) -> list[dict[str, Any]]:
    """Check ``data`` and re-score it; one results record per track, or a SubmissionError.

    ``free``: where and how fast to evaluate (``workers``, ``executor``, ``store_path``), as for
    :func:`~dreamer_gym.leaderboard.run_track`. ``cache``: a folder holding each track's evaluation cache
    (:mod:`~dreamer_gym.leaderboard.rescore_cache`: the before side of every region, and every episode whose
    retrieval a submission left unchanged, are played once per track, pool and code; ``None``: in memory, empty).
    ``timings``, if given, receives the seconds spent on the checks and on the re-score and the episodes played
    and served by the cache (never the results: they hold no time, and a cached episode is the same result as a
    played one)."""
    import time

    timings = {} if timings is None else timings
    start = time.perf_counter()
    checked_blocks = check_data(data, extra_tracks, references)
    timings["checks_s"] = time.perf_counter() - start
    out = []
    for checked in checked_blocks:
        start = time.perf_counter()
        rule = builtin_rule(data["consolidator"])
        counts: dict[str, int] = {}
        where = {**cached_free(checked.track, cache, free), "evaluation": counts}
        if rule is None:
            records = rescore(checked.track, checked.block, progress=progress, **where)
        else:
            records = rerun(checked.track, checked.block, rule, progress=progress, **where)
        timings["rescore_s"] = timings.get("rescore_s", 0.0) + time.perf_counter() - start
        for key, count in (("episodes_played", counts.get("misses", 0)), ("episodes_cached", counts.get("hits", 0))):
            timings[key] = timings.get(key, 0) + count
        compare_claims(checked.index, checked.block, records)
        record = results_record(data, checked.track, records, "re-scored", references=references)
        if rule is not None:
            record["builtin"] = rule  # the board re-ran the package's rule: an anchor or fixed baseline may be it
        out.append(record)
    return out
