"""Red team, typed-in task knowledge (issue 38, item 1): a consolidator whose source holds the held-out families'
reference procedures, paraphrased past the lexical copy check, is listed as "needs review" in both tiers, and no
honest committed row is. Each test fails if its attack is accepted unflagged.

* the rule's thresholds, on every committed row of every track and on the paraphrases (no simulator);
* the re-scored tier: the paraphrase of the committed ``oracle.json`` passes every data check and needs review;
* the verified tier: the attack typed into a module file, run by verify's own functions in the real bubblewrap
  sandbox on the shared fresh draw (tests/red_team/conftest.py), checked and re-scored there, and validated as a
  re-scored submission of that draw: needs review, in the regions the oracle's abstractions are not the region's
  (a partial paraphrase, 2 regions beside dedupe's, is judged in the re-scored tier: its verdict needs no run);
* a recorded review, and only one of that submission, decides a flagged row.
"""
from __future__ import annotations

import copy
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard import load_track
from dreamer_gym.leaderboard.grounding import public_trajectories
from dreamer_gym.leaderboard.review import (
    GROUNDED_BELOW,
    SIMILAR_FROM,
    load_reviews,
    needs_review,
    region_checks,
)
from dreamer_gym.leaderboard.sandbox import Sandbox
from dreamer_gym.leaderboard.similarity import reference_blocks
from dreamer_gym.leaderboard.validate import NEAR_COPY, check_data, reported_columns, validate
from dreamer_gym.leaderboard.verify import run_sandboxed, verified_record

import red_team_draw
from red_team_draw import FRESH_SEED, STORED_HASH, FreshDraw, acquire_fresh, make_fresh_draw
from typed_in import margin_line, paraphrase, paraphrased_texts, word_overlap, write_attack

ROOT = Path(__file__).resolve().parents[2]
SUBMISSIONS = ROOT / "leaderboards" / "submissions"
DOCS = ROOT / "docs" / "leaderboard.md"
TRACKS = ("scienceworld", "alfworld-gen", "miniwob")
# the partial attack's families: the oracle's longest then shortest lived animals, and its longest lived ones
PARTIAL = ("lifespan-longest-lived-then-shortest-lived", "lifespan-longest-lived")
# where the oracle's abstractions (its animal lists) are not the region's own: the only families a paraphrase is
# flagged in (identify-life-stages-1's oracle steps are steps its regions' episodes take)
LIFESPAN = {"lifespan-longest-lived", "lifespan-shortest-lived", "lifespan-longest-lived-then-shortest-lived"}


def committed(name: str) -> dict[str, Any]:
    return json.loads((SUBMISSIONS / f"{name}.json").read_text())


def submissions() -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(SUBMISSIONS.glob("*.json"))}


def as_paraphrase(data: dict[str, Any], name: str, regions: Sequence[int] | None = None,
                  base: dict[str, Any] | None = None) -> dict[str, Any]:
    """``data``'s banks paraphrased (only ``regions``, the others taken from ``base``), with their call logs, as
    someone's contender: what an attacker who read the public ``oracle.json`` submits."""
    out = copy.deepcopy(base or data)
    out["consolidator"].update(name=name, kind="contender", config={"consolidator": name}, link="")
    block, source = out["tracks"][0], data["tracks"][0]["regions"]
    for j, region in enumerate(block["regions"]):
        if regions is not None and j not in regions:
            continue
        emitted = [paraphrase(e) for e in source[j]["emitted"]]
        calls = [json.loads(c) for c in source[j]["calls"]]
        texts = iter(e["text"] for e in emitted)
        calls = [{**c, "text": next(texts)} if c["tool"] == "emit" else c for c in calls]
        block["regions"][j] = {**source[j], "emitted": emitted, "calls": [json.dumps(c) for c in calls]}
    return out


@pytest.fixture(scope="module")
def judged() -> dict[str, tuple[str, list[Any]]]:
    """Every committed submission's region checks against its track's committed references, and the paraphrases'
    (``name`` -> (track, checks)); one grounding memo per track, so a kept entry is checked once."""
    data = submissions()
    out: dict[str, tuple[str, list[Any]]] = {}
    oracle = data["oracle"]
    dedupe = data["dedupe"]
    attacks = {"paraphrase of oracle.json": as_paraphrase(oracle, "typed-in"),
               f"partial paraphrase ({len(PARTIAL)} families of bank 0)": as_paraphrase(
                   oracle, "typed-in-partial", [j for j, r in enumerate(oracle["tracks"][0]["regions"])
                                                if r["bank"] == 0 and r["family"] in PARTIAL], base=dedupe)}
    keep_all = copy.deepcopy(data["keep-all"])
    for region, para in zip(keep_all["tracks"][0]["regions"], attacks["paraphrase of oracle.json"]["tracks"][0]["regions"]):
        region["emitted"] += para["emitted"]
    attacks["keep-all + paraphrase"] = keep_all
    for track_name in TRACKS:
        track = load_track(track_name)
        trajectories, memo = public_trajectories(track), {}
        references = [d for d in data.values() if d["consolidator"]["kind"] == "reference"
                      and any(b["track"] == track_name for b in d["tracks"])]
        rows = {n: d for n, d in data.items() if d["consolidator"]["kind"] != "reference"
                and d["tracks"][0]["track"] == track_name}
        if track_name == "scienceworld":
            rows.update(attacks)
        for name, d in rows.items():
            refs = reference_blocks(track_name, references, d)
            out[name] = (track_name, region_checks(d["tracks"][0]["regions"], refs, trajectories,
                                                   track.config().suite, memo))
    return out


def test_no_honest_committed_row_needs_review_and_every_paraphrase_does(judged: dict[str, tuple[str, list[Any]]]
                                                                         ) -> None:
    honest = {n: checks for n, (_, checks) in judged.items() if "paraphrase" not in n}
    attacks = {n: checks for n, (_, checks) in judged.items() if "paraphrase" in n}
    assert len(honest) >= 30 and len(attacks) == 3
    flagged = {n: [c.region for c in checks if c and c.flagged] for n, checks in honest.items()}
    assert not any(flagged.values()), {n: f for n, f in flagged.items() if f}
    # the margins the thresholds keep on the honest rows: where they read as much as SIMILAR_FROM of a reference,
    # their evidence shows all of it; where it does not show some of it, they read at most half of it
    done = [c for checks in honest.values() for c in checks if c is not None]
    assert min(c.grounded for c in done if c.read >= SIMILAR_FROM) == 1.0 > GROUNDED_BELOW
    assert max(c.read for c in done if c.unheld) <= 0.5 < SIMILAR_FROM
    for name, checks in attacks.items():
        hits = [c for c in checks if c and c.flagged]
        assert hits, f"{name} is not flagged"
        assert all(c.read == 1.0 and c.grounded <= 0.8 for c in hits), name
    partial = next(checks for n, checks in attacks.items() if n.startswith("partial"))
    assert {c.region for c in partial if c and c.flagged} <= {c.region for c in partial if c and c.read == 1.0}
    assert len([c for c in partial if c and c.flagged]) in (1, 2)  # only its own regions, the dedupe ones are clear
    # the table in docs/leaderboard.md ("Needs review") is these numbers
    text = DOCS.read_text()
    missing = [line for name, (track, checks) in judged.items()
               if (line := margin_line(name if track == "scienceworld" else f"{name} ({track})", checks)) not in text]
    assert not missing, "docs/leaderboard.md's needs-review table is stale; these lines are today's:\n" + "\n".join(missing)


def test_the_paraphrase_of_the_committed_oracle_passes_the_rescored_checks_and_needs_review() -> None:
    """The re-scored tier: checks 1-4 (the copy check against the committed oracle included) pass, so only the
    verdict in its results record stands between it and a rank; full and partial."""
    oracle = committed("oracle")
    track = load_track("scienceworld")
    partial = [j for j, r in enumerate(oracle["tracks"][0]["regions"]) if r["bank"] == 1 and r["family"] in PARTIAL]
    for attack in (as_paraphrase(oracle, "typed-in"), as_paraphrase(oracle, "typed-in-partial", partial,
                                                                     base=committed("dedupe"))):
        overlaps = [word_overlap(p["text"], o["text"]) for q, r in zip(attack["tracks"][0]["regions"],
                                                                       oracle["tracks"][0]["regions"])
                    for p, o in zip(q["emitted"], r["emitted"]) if p["id"] != o["id"]]
        assert 0 < max(overlaps) < NEAR_COPY
        check_data(attack, references=[oracle])  # passes: the copy check is lexical
        review = reported_columns(attack, track, [oracle])["review"]
        assert review["needs_review"], review["reason"]
        assert {r["family"] for r in review["regions"]} <= LIFESPAN
        assert "read like reference 'oracle'" in review["reason"]


@pytest.fixture(scope="module")
def fresh_draw(tmp_path_factory: pytest.TempPathFactory) -> FreshDraw:
    """The red team's fresh draw (tests/red_team/conftest.py) on one in-family episode a region and none of other
    families: the attack's verdict is read from its banks, not its score (the score still comes from real
    episodes), so the oracle's run and the attack's play a third of the draw's episodes."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(red_team_draw, "EPISODES", {"eval_in_family": 1, "eval_other": 0})
        return make_fresh_draw(tmp_path_factory.mktemp("fresh-draw").resolve())


@pytest.fixture(scope="module")
def attack_code(fresh_draw: FreshDraw, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The attacker's module, its texts paraphrased from the fresh draw's oracle out here and typed into the file."""
    folder = tmp_path_factory.mktemp("typed-in")
    texts = paraphrased_texts(fresh_draw.references[0])
    assert set(texts) == set(fresh_draw.track.families)
    write_attack(folder, texts)
    return folder


def test_the_typed_in_paraphrase_needs_review_in_the_verified_and_the_rescored_tier(
        fresh_draw: FreshDraw, attack_code: Path) -> None:
    """The attack run as verify runs a consolidator (its self-tested sandbox, the real env and withholding service
    out here), its record built by verify's last stage against the oracle of this draw."""
    free, seconds = fresh_draw.free, {}
    clock = time.perf_counter()
    data = run_sandboxed(fresh_draw.track, "typed_in_attack:Paraphrase", Sandbox(code=(attack_code,)),
                         kind="contender", name="typed-in-paraphrase", episode_secret=fresh_draw.episode_secret, **free)
    seconds["sandboxed_run_s"] = round(time.perf_counter() - clock, 1)
    oracle_score = fresh_draw.references[0]["tracks"][0]["claimed"]["score"]
    verification = {"bank_seeds": [FRESH_SEED], "pool_hash": fresh_draw.track.pool_hash, "sandbox": "bubblewrap",
                    "oracle_score": oracle_score}
    clock = time.perf_counter()
    record = verified_record(fresh_draw.track, data, fresh_draw.references, verification,
                             episode_secret=fresh_draw.episode_secret, **free)
    seconds["verified_record_s"] = round(time.perf_counter() - clock, 1)
    assert record["tier"] == "verified"
    # both columns, against the oracle and the pool of this draw
    assert record["reader_similarity"]["references"] == ["oracle"] and record["reader_similarity"]["mean"] >= 0.9
    assert record["grounding"]["share"] is not None
    review = record["review"]
    assert review["needs_review"], review
    assert {r["family"] for r in review["regions"]} <= LIFESPAN, review["regions"]
    # the same submission in the re-scored tier of this draw: validated (checks, re-score on the same episodes,
    # served by the draw's evaluation cache), the fresh oracle as its reference
    clock = time.perf_counter()
    [rescored] = validate(data, extra_tracks={fresh_draw.track.name: fresh_draw.track},
                          references=fresh_draw.references, progress=False,
                          episode_secret=fresh_draw.episode_secret, **free)
    seconds["validate_s"] = round(time.perf_counter() - clock, 1)
    assert rescored["tier"] == "re-scored" and rescored["review"]["needs_review"], rescored["review"]
    assert rescored["review"]["regions"] == review["regions"]
    print(f"typed-in paraphrase on bank seed {FRESH_SEED}: verified score {record['summary']['score']:+.4f} (oracle "
          f"{oracle_score:+.4f}); reader similarity {record['reader_similarity']['mean']:.2f}, grounding "
          f"{record['grounding']['share']:.2f}; {review['reason']}; fixture {fresh_draw.seconds}, this test {seconds}")


# the stored fresh draw (tests/red_team/red_team_draw.py) acquired again: real acquisition, ~25 s on 2 cores. In CI,
# verify's acquisition runs in tests/leaderboard/test_verify.py::test_verify_runs_the_consolidator_in_its_sandbox_on_a_
# fresh_draw, and the fixture loads the stored file by its pinned hash
@pytest.mark.heavy
@pytest.mark.jvm
def test_the_stored_fresh_draw_is_what_acquisition_makes(tmp_path: Path) -> None:
    _, pool_hash = acquire_fresh(tmp_path / "pool.json.gz")
    assert pool_hash == STORED_HASH


# --- recorded reviews -----------------------------------------------------------------------------------------
SHA = "ab" * 32


def record(needs: bool, sha: str = SHA, name: str = "my-policy", kind: str = "contender") -> dict[str, Any]:
    regions = [{"region": 3, "family": "lifespan-longest-lived", "read": 1.0, "grounded": 0.56}] if needs else []
    return {"track": "scienceworld", "submission_sha256": sha, "consolidator": {"name": name, "kind": kind},
            "review": {"needs_review": needs, "regions": regions, "reason": "reads like 'oracle'" if needs else "ok"}}


def write_review(folder: Path, stem: str, **fields: Any) -> Path:
    data = {"row": "my-policy", "submission_sha256": SHA, "reviewer": "A. Reviewer", "date": "2026-12-08",
            "decision": "cleared", "reason": "the procedures are extracted by its trained reader (link)", **fields}
    path = folder / "scienceworld" / f"{stem}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))  # JSON is YAML
    return path


def test_only_a_recorded_review_of_that_submission_decides_a_flagged_row(tmp_path: Path) -> None:
    assert needs_review(record(False), {}).ranked
    waiting = needs_review(record(True), {})
    assert (waiting.state, waiting.ranked) == ("needs review", False) and waiting.regions[0]["region"] == 3
    write_review(tmp_path, "my-policy")
    reviews = load_reviews(tmp_path)
    cleared = needs_review(record(True), reviews)
    assert (cleared.state, cleared.ranked) == ("cleared", True) and "A. Reviewer" in cleared.reason
    # a decision on another submission of the same name, or on another row, decides nothing
    assert needs_review(record(True, sha="cd" * 32), reviews).state == "needs review"
    assert needs_review(record(True, name="other-policy"), reviews).state == "needs review"
    write_review(tmp_path, "my-policy", decision="rejected", reason="typed-in lifespans")
    rejected = needs_review(record(True), load_reviews(tmp_path))
    assert (rejected.state, rejected.ranked) == ("rejected", False) and "typed-in lifespans" in rejected.reason
    assert needs_review(record(False, kind="reference"), {}).state == "reference"
    assert needs_review({"consolidator": {"kind": "contender"}}, {}).state == "unjudged"


@pytest.mark.parametrize(("fields", "said"), [
    ({"decision": "ok"}, r"review `decision`: expected one of \('cleared', 'rejected'\), got 'ok'"),
    ({"submission_sha256": "abc"}, r"review `submission_sha256`: expected the 64 lower-case hex digits"),
    ({"date": "yesterday"}, r"review `date`: expected an ISO date"),
    ({"reviewer": " "}, r"review `reviewer`: expected a non-empty string"),
    ({"ranked": True}, r"expected exactly the fields \['date', 'decision', 'reason', 'reviewer', 'row', "),
])
def test_a_malformed_review_is_refused_with_the_field(tmp_path: Path, fields: dict[str, Any], said: str) -> None:
    write_review(tmp_path, "my-policy", **fields)
    with pytest.raises(ConfigError, match=said):
        load_reviews(tmp_path)


def test_two_reviews_of_one_submission_are_refused_and_the_committed_ones_load(tmp_path: Path) -> None:
    write_review(tmp_path, "my-policy")
    write_review(tmp_path, "my-policy.verified")
    with pytest.raises(ConfigError, match="already has a review"):
        load_reviews(tmp_path)
    committed_reviews = load_reviews(ROOT / "leaderboards" / "reviews")
    results = [json.loads(p.read_text()) for p in (ROOT / "leaderboards" / "results").glob("*/*.json")]
    digests = {r["submission_sha256"] for r in results}
    assert all(sha in digests for sha in committed_reviews)  # every recorded decision is of a committed row
