"""Red team, reported columns: grounding (does the cited evidence hold a bank's text?) and reader-level
similarity (does the downstream agent read a reference out of it?). Real pool, real consolidators (the
committed submissions of the scienceworld track, and ``constant``/``bait`` run through the env's tools),
no simulator: both columns are pure text over the public pool."""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from dreamer_gym.consolidators import make_consolidator
from dreamer_gym.consolidators.base import call
from dreamer_gym.consolidators.oracle import ReferenceEvidence
from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.leaderboard.grounding import FLAG_BELOW, public_trajectories, track_grounding
from dreamer_gym.leaderboard.render import render
from dreamer_gym.leaderboard.review import region_checks
from dreamer_gym.leaderboard.similarity import reader_similarity
from dreamer_gym.leaderboard.tracks import load_track
from dreamer_gym.leaderboard.validate import results_record
from dreamer_gym.memory import MemoryEntry
from dreamer_gym.pool import load_or_build_pool
from dreamer_gym.service import make_reward_service

from typed_in import margin_line, paraphrase, word_overlap

ROOT = Path(__file__).resolve().parents[2]
SUBMISSIONS = ROOT / "leaderboards" / "submissions"
RESULTS = ROOT / "leaderboards" / "results" / "scienceworld"


@pytest.fixture(scope="module")
def track() -> Any:
    return load_track("scienceworld")


def submission(name: str) -> dict[str, Any]:
    return json.loads((SUBMISSIONS / f"{name}.json").read_text())


def regions(name: str) -> list[dict[str, Any]]:
    return submission(name)["tracks"][0]["regions"]


# the red team is driven on the first banks only: each of its regions re-reads the pool's gold paths (~0.25 s),
# and 40 regions are plenty for a mean and for the needs-review rule (all 160: ~75 s more on 2 cores)
DRIVEN_BANKS = 10


def drive(track: Any, name: str, banks: int | None = None) -> list[dict[str, Any]]:
    """``name``'s new regions on every region of ``track`` (of its first ``banks`` banks), through the env's own
    tools, up to (not including) the commit: what it would submit, without playing an evaluation episode."""
    config = track.config()
    service = make_reward_service("inprocess", config, withhold=True)
    env = ConsolidationEnv(**track.env_kwargs(), reward_service=service)
    policy = make_consolidator(name)
    out = []
    try:
        for i, (bank, family) in enumerate(track.regions()):
            if banks is not None and bank >= banks:
                continue
            obs, info = env.reset(seed=track.seed + i, options={"bank": bank, "family": family})
            calls = policy.actions(env, obs, info)
            action = next(calls, call("commit"))
            while json.loads(action)["tool"] != "commit":
                obs, _, terminated, truncated, info = env.step(action)
                assert not (terminated or truncated), f"{name} ended region {i} before its commit"
                action = calls.send((obs, info))
            out.append({"bank": bank, "family": family, "emitted": info["emitted"]})
    finally:
        env.close()
        service.close()
    return out


@pytest.fixture(scope="module")
def driven(track: Any) -> dict[str, list[dict[str, Any]]]:
    """The red team's ``constant`` and ``bait`` on every region of the track, through the env's tools. Their texts
    are the oracle's, rebuilt at every commit by a fresh OracleConsolidator that reads the pool file's gold paths
    again (~0.25 s a region, 80 regions); here the read is done once per pool, as OracleConsolidator.train_gold
    means it to be (the same file, the same evidence: nothing the policies write changes)."""
    load = ReferenceEvidence.load.__func__
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ReferenceEvidence, "load", classmethod(functools.cache(load)))
        return {name: drive(track, name, DRIVEN_BANKS) for name in ("constant", "bait")}


@pytest.fixture(scope="module")
def shares(track: Any, driven: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    banks = {name: regions(name) for name in ("oracle", "dedupe", "consensus", "keep-all")}
    banks.update(driven)
    return {name: track_grounding(track, {"regions": r}) for name, r in banks.items()}


def test_constant_and_bait_need_review(track: Any, driven: dict[str, list[dict[str, Any]]]) -> None:
    """They write the oracle's evidence into every region: the rule flags the regions whose episodes do not show it
    (tests/red_team/test_review.py sets the thresholds; docs/leaderboard.md, "Needs review", holds these lines)."""
    refs = [("oracle", [r for r in regions("oracle") if r["bank"] < DRIVEN_BANKS])]
    trajectories, memo = public_trajectories(track), {}
    docs = (ROOT / "docs" / "leaderboard.md").read_text()
    for name, banks in driven.items():
        checks = region_checks(banks, refs, trajectories, "scienceworld", memo)
        hits = [c for c in checks if c is not None and c.flagged]
        assert len(hits) >= len(checks) // 2 and all(c.read == 1.0 for c in hits), name
        line = margin_line(f"{name} (red team)", checks)
        assert line in docs, f"docs/leaderboard.md's needs-review table is stale; today's line: {line}"


def test_grounding_separates_gold_paths_and_red_team_from_region_derived_rules(shares: dict[str, dict[str, Any]]) -> None:
    derived = {n: shares[n]["share"] for n in ("dedupe", "consensus", "keep-all")}
    privileged = {n: shares[n]["share"] for n in ("oracle", "constant", "bait")}
    assert min(derived.values()) >= 0.95, derived
    assert max(privileged.values()) <= 0.8, privileged
    assert min(derived.values()) - max(privileged.values()) >= 0.2, (derived, privileged)
    assert shares["constant"]["share"] < shares["oracle"]["share"]  # other families' procedures too
    assert all(shares[n]["unsupported"] > 50 for n in privileged)
    # the red team's entries for other families are flagged; the region-derived rules' never are
    assert shares["constant"]["flagged"] and shares["bait"]["flagged"]
    assert not any(shares[n]["flagged"] for n in derived)


def test_an_entry_with_invented_steps_is_flagged_and_one_copied_from_its_evidence_is_not(track: Any) -> None:
    config = track.config()
    pool = load_or_build_pool(config.pool, config.suite, config.pool_hash, progress=False)
    region = regions("dedupe")[0]
    cited = MemoryEntry.from_dict(region["emitted"][0]).provenance[0]
    trajectory = pool.trajectories[cited.trajectory_id]
    whole = [{"trajectory_id": trajectory.id, "start": 0, "end": len(trajectory.steps) - 1}]
    goal = trajectory.task_description.split(". ")[0].removeprefix("Your task is to ")
    copied = MemoryEntry.from_dict({"kind": "procedure", "family": region["family"], "provenance": whole,
                                    "text": f"To {goal}: " + ", ".join(s.action for s in trajectory.steps[:12])})
    invented = MemoryEntry.from_dict({"kind": "procedure", "family": region["family"], "provenance": whole,
                                      "text": "To boil water: go to kitchen, pick up pot, move pot to stove, "
                                              "activate stove, wait1, focus on steam. Water boils at: 100 degrees."})
    before = track_grounding(track, {"regions": [region]})
    after = track_grounding(track, {"regions": [{**region, "emitted": [*region["emitted"], copied.to_dict(),
                                                                        invented.to_dict()]}]})
    flagged = {f["id"]: f for f in after["flagged"]}
    assert invented.id in flagged and copied.id not in flagged, after["flagged"]
    assert flagged[invented.id]["share"] < FLAG_BELOW
    assert "goal: boil water" in flagged[invented.id]["unheld"]
    assert after["unsupported"] >= before["unsupported"] + 6  # the goal and at least five invented steps
    assert after["share"] < before["share"]


def test_reader_similarity_sees_a_paraphrase_of_the_oracle_that_words_do_not(track: Any) -> None:
    oracle = regions("oracle")
    para = [{**r, "emitted": [paraphrase(e) for e in r["emitted"]]} for r in oracle]
    overlaps = [word_overlap(p["text"], o["text"]) for r, q in zip(oracle, para) for o, p in zip(r["emitted"], q["emitted"])]
    assert max(overlaps) < 0.6, overlaps  # far below the lexical copy check's 0.9
    refs = [("oracle", oracle)]
    close = reader_similarity(para, refs, "scienceworld")
    far = {name: reader_similarity(regions(name), refs, "scienceworld")["mean"] for name in ("dedupe", "keep-all")}
    assert close["mean"] >= 0.9 and close["nearest"] == "oracle", close
    assert max(far.values()) <= 0.2, far
    assert reader_similarity(para, [], "scienceworld")["mean"] is None  # no reference: nothing to compare


def test_the_columns_are_in_the_results_record_and_on_the_rendered_board(track: Any, tmp_path: Path) -> None:
    references = [submission("oracle")]
    out = tmp_path / "results" / "scienceworld"
    out.mkdir(parents=True)
    for name in ("empty", "oracle", "dedupe"):
        recorded = json.loads((RESULTS / f"{name}.json").read_text())
        record = results_record(submission(name), track, recorded["records"], "re-scored", references=references)
        assert {"grounding", "reader_similarity"} <= set(record)
        (out / f"{name}.json").write_text(json.dumps(record))
    dedupe = json.loads((out / "dedupe.json").read_text())
    assert dedupe["grounding"]["share"] >= 0.95 and dedupe["reader_similarity"]["mean"] <= 0.2
    oracle = json.loads((out / "oracle.json").read_text())
    assert oracle["reader_similarity"]["mean"] is None  # a reference is not compared with itself
    readme, page = render(tmp_path / "results", tmp_path / "board")
    text, html = readme.read_text(), page.read_text()
    for header in ("grounding", "reader similarity to a reference"):
        assert header in text and header in html
    row = next(line for line in text.splitlines() if line.startswith("| ") and "| dedupe |" in line)  # the ranking
    assert f"| {dedupe['grounding']['share']:.2f} | {dedupe['reader_similarity']['mean']:.2f} |" in row
