"""Leaderboard submissions: every rejection with its message, and a re-score that reproduces (or refuses)
the claims, on a two-region track of the real held-out ScienceWorld pool."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from dreamer_gym.consolidators import make_consolidator
from dreamer_gym.leaderboard import PROTOCOL_VERSION, Track, load_track
from dreamer_gym.leaderboard.submission import (
    SubmissionError,
    build_submission,
    consolidator_block,
    dumps,
    load_submission,
    run_for_submission,
)
from dreamer_gym.leaderboard.validate import StaleSubmission, check_data, compare_claims, validate
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.pool import load_pool

FAMILY = "lifespan-longest-lived"


def tiny_track(name: str = "tiny", banks: tuple[int, ...] = (0, 1)) -> Track:
    """The shipped track's settings on one family, two banks (or ``banks``), 1+1 episodes a region."""
    data = {**load_track("scienceworld").__dict__, "name": name, "families": (FAMILY,), "banks": banks,
            "eval_in_family": 1, "eval_other": 1}
    return Track(**data)


TRACKS = {"tiny": tiny_track()}


@pytest.fixture(scope="module")
def submission() -> dict:
    """The oracle on the tiny track: a new entry with provenance in both regions (a reference, but its banks
    are data like any other's)."""
    track = TRACKS["tiny"]
    result = run_for_submission(track, make_consolidator("oracle"), progress=False)
    data = build_submission(consolidator_block("oracle", kind="reference", config={"consolidator": "oracle"}),
                            [(track, result)])
    return json.loads(dumps(data))


@pytest.fixture(scope="module")
def rescore_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The evaluation cache the re-score fills (`validate --cache`): a later validate of the same banks is served
    from it (tests/leaderboard/test_rescore_cache.py: a served episode is exactly the played one)."""
    return tmp_path_factory.mktemp("rescore-cache")


@pytest.fixture(scope="module")
def rescored(submission: dict, rescore_cache: Path) -> list[dict]:
    """The re-score of the submission, played afresh (its cache starts empty)."""
    return validate(copy.deepcopy(submission), extra_tracks=TRACKS, progress=False, cache=rescore_cache)


def _new_entry(data: dict, region: int = 0) -> dict:
    """The first entry of a region that was written by emit (not kept)."""
    return next(e for e in data["tracks"][0]["regions"][region]["emitted"] if "consolidated" in e["tags"])


def _renew(entry: dict) -> None:
    """Give an edited entry the id of its content, so the checks after the id check are reached."""
    entry["id"] = MemoryEntry.from_dict(entry).id


def _region_entry(data: dict) -> dict:
    track = TRACKS["tiny"]
    bank = load_pool(track.pool, track.pool_hash).banks[0]
    return next(e for e in bank if e.family == FAMILY).to_dict()


def _other_trajectory(data: dict) -> str:
    track = TRACKS["tiny"]
    pool = load_pool(track.pool, track.pool_hash)
    return next(t.id for t in pool.trajectories.values() if t.family != FAMILY)


def _set(path: str, value):  # noqa: ANN202 - a mutation
    def mutate(d: dict) -> None:
        *head, last = path.split(".")
        node = d
        for key in head:
            node = node[int(key)] if key.isdigit() else node[key]
        node[int(last) if last.isdigit() else last] = value
    return mutate


def _delete(path: str):  # noqa: ANN202
    def mutate(d: dict) -> None:
        *head, last = path.split(".")
        node = d
        for key in head:
            node = node[int(key)] if key.isdigit() else node[key]
        del node[last]
    return mutate


def _provenance_elsewhere(d: dict) -> None:
    entry = _new_entry(d)
    entry["provenance"] = [{"trajectory_id": _other_trajectory(d), "start": 0, "end": 0}]
    _renew(entry)


def _provenance_past_the_end(d: dict) -> None:
    entry = _new_entry(d)
    entry["provenance"] = [{**entry["provenance"][0], "end": 10**6}]
    _renew(entry)


def _giant_entry(d: dict) -> None:
    entry = _new_entry(d)
    entry["text"] = " ".join(["step"] * 2000)
    _renew(entry)


def _thirteen_new_entries(d: dict) -> None:
    region = d["tracks"][0]["regions"][0]
    template = _new_entry(d)
    region["emitted"] = []
    for i in range(13):
        entry = {**template, "text": f"{template['text']} (variant {i})"}
        _renew(entry)
        region["emitted"].append(entry)


def _edited_text_same_id(d: dict) -> None:
    _new_entry(d)["text"] += " and then win"


def _kept_entry_changed(d: dict) -> None:
    entry = {**_region_entry(d)}
    entry["text"] = entry["text"] + " (edited)"
    d["tracks"][0]["regions"][0]["emitted"].append(entry)


def _alien_family(d: dict) -> None:
    entry = _new_entry(d)
    entry["family"] = "lifespan-shortest-lived"
    _renew(entry)


def _drop_region(d: dict) -> None:
    d["tracks"][0]["regions"].pop()


def _swap_regions(d: dict) -> None:
    regions = d["tracks"][0]["regions"]
    regions[0], regions[1] = regions[1], regions[0]


def _foreign_region(d: dict) -> None:
    d["tracks"][0]["regions"][1]["family"] = "lifespan-shortest-lived"


REJECTIONS = {
    "missing field": (_delete("consolidator.link"), r"`consolidator`: 'link' is a required property"),
    "wrong type": (_set("tracks.0.regions.0.bank", "0"), r"`tracks\[0\]\.regions\[0\]\.bank`: '0' is not of type 'integer'"),
    "wrong kind": (_set("consolidator.kind", "winner"), r"`consolidator\.kind`: 'winner' is not one of"),
    "unknown track": (_set("tracks.0.track", "nope"), r"`tracks\[0\]\.track`: unknown track 'nope' \(known: \[.*'scienceworld'.*\]\); a submission made on a "
                      r"track file is validated with `--track FILE`"),
    "transfer track": (_set("tracks.0.track", "transfer"), r"is a transfer track; submit each of its member tracks"),
    "changed frozen field": (_set("tracks.0.frozen.size_coef", 0.0),
                             r"`tracks\[0\]\.frozen\.size_coef`: changed frozen field: the submission has 0\.0, "
                             r"track 'tiny' \(protocol 3\) freezes 0\.02"),
    "missing frozen field": (_delete("tracks.0.frozen.seed"), r"`tracks\[0\]\.frozen\.seed`: missing; track 'tiny' freezes it"),
    "provenance outside the region": (_provenance_elsewhere, r"provenance outside the region: trajectory .* is not cited "
                                                             r"by region \(bank 0, family 'lifespan-longest-lived'\)"),
    "provenance past the trajectory": (_provenance_past_the_end, r"provenance outside the region: steps \[\d+, 1000000\]"),
    "entry over the token budget": (_giant_entry, r"`tracks\[0\]\.regions\[0\]\.emitted\[\d+\]\.text`: over budget: 2000 "
                                                  r"tokens .* max_entry_tokens=320"),
    "too many new entries": (_thirteen_new_entries, r"`tracks\[0\]\.regions\[0\]\.emitted`: over budget: 13 new entries; "
                                                    r"the track allows max_emitted=12"),
    "too many tool calls": (_set("tracks.0.regions.0.tool_calls", 41), r"over budget: 41 tool calls; the track allows "
                                                                       r"max_tool_calls=40"),
    "id not the content's": (_edited_text_same_id, r"is not this entry's content hash"),
    "kept entry changed": (_kept_entry_changed, r"kept entry e\w+ differs from the region's in \['text'\]"),
    "new entry of another family": (_alien_family, r"`tracks\[0\]\.regions\[0\]\.emitted\[\d+\]\.family`"),
    "missing region": (_drop_region, r"wrong regions: missing \[\(1, 'lifespan-longest-lived'\)\]"),
    "regions out of order": (_swap_regions, r"wrong regions: the order differs"),
    "region not on the track": (_foreign_region, r"wrong regions: missing .* not on the track \[\(1, 'lifespan-shortest-lived'\)\]"),
    "missing seed": (_delete("tracks.0.regions.1.seed"), r"`tracks\[0\]\.regions\[1\]`: 'seed' is a required property"),
    "wrong seed": (_set("tracks.0.regions.1.seed", 7), r"`tracks\[0\]\.regions\[1\]\.seed`: the track resets this region "
                                                       r"with seed 20261204, the submission has 7"),
}


@pytest.mark.jvm
@pytest.mark.parametrize("case", sorted(REJECTIONS))
def test_each_rejection_names_the_field_and_what_was_expected(submission: dict, case: str) -> None:
    mutate, message = REJECTIONS[case]
    data = copy.deepcopy(submission)
    mutate(data)
    with pytest.raises(SubmissionError, match=message):
        check_data(data, TRACKS)
    check_data(copy.deepcopy(submission), TRACKS)  # the unmutated submission passes the same checks


@pytest.mark.jvm
def test_an_older_protocol_is_stale_not_rescored(submission: dict) -> None:
    data = copy.deepcopy(submission)
    data["tracks"][0]["protocol_version"] = 2
    with pytest.raises(StaleSubmission, match=r"2 is stale; this package scores protocol 3"):
        check_data(data, TRACKS)


def test_a_file_that_is_not_json_is_rejected_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"schema_version": 1,\n oops}')
    with pytest.raises(SubmissionError, match=r"not JSON .* at line 2"):
        load_submission(path)


@pytest.mark.jvm
def test_the_rescore_reproduces_every_claim(submission: dict, rescored: list[dict]) -> None:
    [result] = rescored
    claims = [r["claimed"] for r in submission["tracks"][0]["regions"]]
    assert [r["reward"] for r in result["records"]] == [c["reward"] for c in claims]
    assert [r["score_after"] for r in result["records"]] == [c["score_after"] for c in claims]
    assert [r["size_after"]["tokens"] for r in result["records"]] == [c["tokens_after"] for c in claims]
    assert result["tier"] == "re-scored" and result["track"] == "tiny" and result["protocol_version"] == PROTOCOL_VERSION
    assert result["summary"]["score"] == submission["tracks"][0]["claimed"]["score"]
    assert all(len(r["episodes"]) == 2 for r in result["records"])


@pytest.mark.jvm
def test_a_claim_the_rescore_does_not_reproduce_is_rejected_with_both_numbers(submission: dict, rescored: list[dict],
                                                                             rescore_cache: Path) -> None:
    """validate end to end, its episodes served by the re-score's cache (the banks are the same)."""
    data = copy.deepcopy(submission)
    claimed = data["tracks"][0]["regions"][1]["claimed"]
    true = claimed["score_after"]
    claimed["score_after"] = true + 10.0
    timings: dict[str, float] = {}
    with pytest.raises(SubmissionError, match=rf"regions\[1\]\.claimed\.score_after`: claimed {true + 10.0!r}, "
                                              rf"re-scored {true!r}"):
        validate(data, extra_tracks=TRACKS, progress=False, cache=rescore_cache, timings=timings)
    assert timings["episodes_played"] == 0 and timings["episodes_cached"] > 0


@pytest.mark.jvm
def test_invalid_calls_and_the_track_score_are_checked_against_the_rescore(submission: dict,
                                                                           rescored: list[dict]) -> None:
    records = rescored[0]["records"]
    data = copy.deepcopy(submission)
    data["tracks"][0]["claimed"]["score"] += 0.5
    with pytest.raises(SubmissionError, match=r"`tracks\[0\]\.claimed\.score`: claimed"):
        compare_claims(0, data["tracks"][0], records)
    data = copy.deepcopy(submission)
    data["tracks"][0]["regions"][0]["claimed"]["reward"] += 0.01  # a claim one invalid call better than the truth
    with pytest.raises(SubmissionError, match=r"regions\[0\]\.claimed\.reward`: claimed"):
        compare_claims(0, data["tracks"][0], records)


@pytest.mark.jvm
def test_rescoring_twice_with_empty_caches_gives_identical_bytes(submission: dict, rescored: list[dict]) -> None:
    # on an in-process service (no service process to start, issue 40: CI time): the bytes do not depend on it
    again = validate(copy.deepcopy(submission), extra_tracks=TRACKS, progress=False, service="inprocess")
    assert dumps(again[0]) == dumps(rescored[0])
    assert "seconds" not in dumps(again[0]) and "/tmp" not in dumps(again[0])


def test_the_cli_rejects_with_the_reason_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In this process (`python -m dreamer_gym.cli` exits with what ``main`` returns; a subprocess cost ~3 s of
    imports, issue 40: CI time)."""
    from dreamer_gym.cli import main

    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"schema_version": 1, "consolidator": {}, "versions": {}, "tracks": []}))
    code = main(["leaderboard", "validate", str(path), "--out-dir", str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "rejected:" in err and "is a required property" in err
    assert not (tmp_path / "results").exists()


@pytest.mark.jvm
def test_a_contender_that_submits_the_oracles_banks_is_rejected(submission: dict) -> None:
    """The oracle's committed banks are public (leaderboards/submissions/): copied, or lightly edited, under a
    contender's name they are refused before any re-score."""
    copy_ = copy.deepcopy(submission)
    copy_["consolidator"].update(name="my-policy", kind="contender")
    with pytest.raises(SubmissionError, match=r"`tracks\[0\]\.regions\[0\]\.emitted\[\d+\]`: a copy of reference "
                                              r"'oracle''s entry e\w+ .* flagged regions \[0, 1\]"):
        check_data(copy_, TRACKS, references=[submission])
    for region in copy_["tracks"][0]["regions"]:
        for entry in region["emitted"]:
            entry["text"] += " Good luck."  # light edits: the word sets stay within NEAR_COPY
            _renew(entry)
    with pytest.raises(SubmissionError, match="a copy of reference 'oracle''s entry"):
        check_data(copy_, TRACKS, references=[submission])
    check_data(copy.deepcopy(submission), TRACKS)  # the reference itself is validated without itself as one


def test_an_llm_consolidator_records_its_model_backend_and_decoding(tmp_path: Path) -> None:
    """Only greedy LLM rows rank: a GRPO checkpoint declares transformers and greedy decoding itself
    (``llm_info``); a prompted consolidator is read off its config; a rule records nothing."""
    from dreamer_gym.leaderboard.board_commands import llm_block
    from dreamer_gym.methods.grpo.consolidator import GRPOConsolidator

    (tmp_path / "trainer_state.json").write_text(json.dumps({"config": {"grammar": "ops", "model": "smollm2-135m"}}))
    assert llm_block(make_consolidator(f"grpo:{tmp_path}")) == {
        "backend": "transformers", "model": f"smollm2-135m + {tmp_path}", "decoding": "greedy"}
    assert llm_block(GRPOConsolidator(greedy=False))["decoding"] == "sampled"
    assert llm_block(make_consolidator("grpo-ops"))["model"] == "smollm2-135m"
    prompted = llm_block(make_consolidator("prompted"))
    assert prompted is not None and prompted["decoding"] == "greedy" and prompted["model"] != "unknown"
    assert llm_block(make_consolidator("keep-all")) is None


@pytest.mark.jvm
def test_submit_with_its_own_cache_writes_the_same_submission_warm(tmp_path: Path, monkeypatch) -> None:
    """`leaderboard submit --cache DIR`: the submitter's own evaluation cache, one file per track; a second submit
    on a warm cache plays nothing new and writes the same regions and claims (a cached episode is the same result)."""
    from dreamer_gym.cli import main
    from dreamer_gym.leaderboard.tracks import TRACKS as REGISTRY

    monkeypatch.setattr(REGISTRY, "_registered", dict(REGISTRY._registered))  # forgotten after the test
    REGISTRY.register("tiny-cache", tiny_track("tiny-cache", banks=(0,)), replace=True)
    outs = []
    for i in range(2):
        out = tmp_path / f"s{i}.json"
        # --workers 0: the service plays in its own process, no worker pool to start (issue 40: CI time)
        assert main(["leaderboard", "submit", "--consolidator", "dedupe", "--track", "tiny-cache", "--quiet",
                     "--workers", "0", "--cache", str(tmp_path / "cache"), "--out", str(out)]) == 0
        outs.append(json.loads(out.read_text()))
    [cache] = (tmp_path / "cache").glob("tiny-cache-*.sqlite")
    assert cache.stat().st_size > 0
    assert outs[0]["tracks"] == outs[1]["tracks"] and len(outs[0]["tracks"][0]["regions"]) == 1
