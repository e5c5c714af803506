"""The learnability study on a track's committed rows: folds of the TEST episodes that share nothing, the track's
reward reproduced on all of them, and trained rows read against the rules (a row that copies a rule plays it)."""
from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from dreamer_gym.errors import ConfigError
from dreamer_gym.studies.track_learnability import (
    RULE_ROWS,
    TrackLearnabilityConfig,
    fold_map,
    fold_rewards,
    median_seeds,
    study,
    to_markdown,
)

RESULTS = Path(__file__).parent.parent / "leaderboards" / "results"


def test_folds_split_every_family_evenly_and_share_no_variation() -> None:
    episodes = [(f"f{f}", v) for f in range(3) for v in range(7 + f)] * 2  # repeats, as over a track's banks
    folds = fold_map(episodes, 2, seed=0)
    assert set(folds) == set(episodes)
    for f in range(3):
        sizes = np.bincount([folds[(f"f{f}", v)] for v in range(7 + f)], minlength=2)
        assert abs(sizes[0] - sizes[1]) <= 1
    assert fold_map(episodes, 2, seed=0) == folds and fold_map(episodes, 2, seed=1) != folds


def record(deltas: list[tuple[float, bool]], size: float, reward: float | None = None) -> dict:
    eps = [{"family": "own" if own else "other", "variation": i, "in_family": own, "before": 50.0, "after": 50.0 + d}
           for i, (d, own) in enumerate(deltas)]
    whole = sum(d if own else min(0.0, d) for d, own in deltas) / (100.0 * len(deltas)) + size
    return {"bank_index": 0, "family": "own", "episodes": eps, "reward_components": {"size": size},
            "reward": whole if reward is None else reward}


def test_a_folds_reward_is_the_tracks_formula_on_its_episodes() -> None:
    r = record([(10.0, True), (-20.0, True), (30.0, False), (-40.0, False)], size=0.01)
    folds = {("own", 0): 0, ("own", 1): 1, ("other", 2): 0, ("other", 3): 1}
    got = fold_rewards(r, folds, 2)
    # fold 0: +10 in family, an other-family gain pays nothing; fold 1: -20 and the other-family loss -40
    assert got == pytest.approx([10.0 / 200 + 0.01, -60.0 / 200 + 0.01])
    with pytest.raises(ValueError, match="the record says"):
        fold_rewards(record([(10.0, True)], 0.0, reward=0.5), {("own", 0): 0}, 2)


def test_median_seed_is_the_middle_score_not_the_best() -> None:
    got = median_seeds({"m-seed0": 0.3, "m-seed1": 0.1, "m-seed2": 0.2, "m-seed3": 0.5, "other": 9.0})
    assert got == {"m": {"seeds": {"m-seed0": 0.3, "m-seed1": 0.1, "m-seed2": 0.2, "m-seed3": 0.5}, "median": "m-seed2"}}


def builtin_rows(root: Path) -> Path:
    """``root``/scienceworld holding the committed scienceworld rows of the package's own consolidators (the rules,
    the baselines, the anchors), not the trained contenders': each contender is read against the rules by a paired
    bootstrap of the board's size, which is most of a study's time."""
    (root / "scienceworld").mkdir(parents=True)
    for path in (RESULTS / "scienceworld").glob("*.json"):
        if json.loads(path.read_text()).get("builtin"):
            shutil.copy(path, root / "scienceworld" / path.name)
    return root


@pytest.fixture(scope="module")
def track_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed scienceworld rows of the built-in consolidators, plus two made-up contenders: one that copies
    dedupe's commits, and one that on every region commits what the region's best rule (in hindsight, on all
    episodes) committed."""
    root = builtin_rows(tmp_path_factory.mktemp("results"))
    rows = {json.loads(p.read_text()).get("builtin"): json.loads(p.read_text())
            for p in (root / "scienceworld").glob("*.json")}
    rules = [name for name in RULE_ROWS if name in rows]
    copier = copy.deepcopy(rows["dedupe"])
    copier.update(builtin=None)
    copier["consolidator"].update(name="copies-dedupe", kind="contender")
    (root / "scienceworld" / "copies-dedupe.json").write_text(json.dumps(copier))
    oracle = copy.deepcopy(rows["dedupe"])
    oracle.update(builtin=None)
    oracle["consolidator"].update(name="hindsight", kind="contender")
    for i, _ in enumerate(oracle["records"]):
        oracle["records"][i] = copy.deepcopy(max((rows[r]["records"][i] for r in rules), key=lambda x: x["reward"]))
    oracle["summary"]["score"] = float(np.mean([r["reward"] for r in oracle["records"]]))
    (root / "scienceworld" / "hindsight.json").write_text(json.dumps(oracle))
    return root


def test_the_study_reads_contenders_against_the_rules(track_results: Path) -> None:
    s = study(TrackLearnabilityConfig(track="scienceworld", bootstrap_resamples=200), track_results)
    assert s["regions"] == 160 and len(s["rules"]) >= 4 and sum(s["episodes_per_fold"]) > 0
    lo, hi = s["gap_ci95"]
    assert lo <= s["gap"] <= hi and s["hindsight"]["gap"] >= s["gap"] - 1e-12  # hindsight counts selection noise
    copier, hindsight = s["policies"]["copies-dedupe"], s["policies"]["hindsight"]
    assert copier["plays"] == {"dedupe": 1.0}
    assert copier["vs_dedupe"]["reward"] == 0.0 and copier["vs_dedupe"]["reward_ci95"] == [0.0, 0.0]
    assert hindsight["plays"].get("none of the rules", 0.0) == 0.0 and sum(hindsight["plays"].values()) == pytest.approx(1)
    # playing the region's best rule agrees with the cross-fitted choice far more often than one constant does
    assert hindsight["agreement"] > s["agreement"]["constant"] + 0.15
    assert hindsight["vs_best_constant"]["reward"] > 0
    assert "copies-dedupe" in to_markdown(s) and s["best_constant"] in to_markdown(s)
    # the fixed references chosen on the other fold, paired per (region, fold): a row that copies dedupe stands
    # exactly where dedupe's own mean over (region, fold) stands against them
    fixed, switch = s["best_fixed"], s["family_switch"]
    assert set(fixed["per_fold"]) <= set(s["rules"]) and set(switch["per_fold"][0]) == set(s["families"])
    assert fixed["in_sample"]["rule"] == s["best_constant"]
    for key, value in (("vs_best_fixed", fixed["value"]), ("vs_family_switch", switch["value"])):
        d = copier[key]
        assert d["difference"] == pytest.approx(s["per_rule"]["dedupe"]["mean"] - value, abs=1e-12)
        assert d["ci95"][0] <= d["difference"] <= d["ci95"][1]
    assert hindsight["vs_best_fixed"]["difference"] > 0 and hindsight["vs_best_fixed"]["excludes_0"]
    page = to_markdown(s)
    assert "| best fixed rule (`" in page and "| family switch (fold 0:" in page and "best constant in sample" in page


def test_the_study_says_which_rows_it_needs(tmp_path: Path) -> None:
    (tmp_path / "scienceworld").mkdir()
    with pytest.raises(ConfigError, match="rule:merge-all --kind fixed"):
        study(TrackLearnabilityConfig(track="scienceworld"), tmp_path)
    with pytest.raises(ConfigError, match="folds"):
        TrackLearnabilityConfig(folds=1)


def test_the_command_writes_the_study_of_a_track(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from dreamer_gym.cli import main

    results = builtin_rows(tmp_path / "results")
    assert main(["learnability", "--track", "scienceworld", "--results", str(results), "--bootstrap-resamples", "50",
                 "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "track-learnability-scienceworld.json").read_text())
    assert data["track"] == "scienceworld" and data["config"]["bootstrap_resamples"] == 50
    assert "best per-region choice" in capsys.readouterr().out


def test_an_archived_protocol_is_the_before_of_the_bump() -> None:
    archive = RESULTS.parent / "archive" / "protocol-2"
    s = study(TrackLearnabilityConfig(track="scienceworld", bootstrap_resamples=100), archive=archive)
    assert s["protocol"] == 2 and s["regions"] == 12 and s["env_id"].endswith("-v0")
    assert {"keep-all", "empty", "dedupe", "consensus"} <= set(s["rules"]) and s["policies"]
    with pytest.raises(ConfigError, match="no .*tracks/nope.yaml"):
        study(TrackLearnabilityConfig(track="nope"), archive=archive)


@pytest.mark.parametrize("track", ["scienceworld", "alfworld-gen", "miniwob"])
@pytest.mark.parametrize("protocol", [2, 3])
def test_the_docs_table_quotes_the_recorded_studies(track: str, protocol: int) -> None:
    """docs/learnability.md's before/after table is the committed study's output, not typed by hand."""
    tracks = Path(__file__).parent.parent / "research" / "results" / "issue31" / "tracks"
    stem = f"track-learnability-{track}" + ("-protocol2" if protocol == 2 else "")
    s = json.loads((tracks / f"{stem}.json").read_text())
    page = (Path(__file__).parent.parent / "docs" / "learnability.md").read_text()
    lo, hi = s["gap_ci95"]
    row = next(line for line in page.splitlines() if f"track `{track}`, protocol {protocol}" in line)
    assert f"**{s['gap']:+.4f}** [{lo:+.4f}, {hi:+.4f}]" in row and f"| {s['regions']} |" in row


def test_a_draft_protocols_staged_rows_are_read_with_the_bank_context(tmp_path: Path) -> None:
    """research/protocol4.py stages the next protocol's rows (tier "draft") beside its draft track, shaped like an
    archive. On a tool-contract-2 id the study adds the bank-context columns of each region, from a reset of it.
    Here the staged rows are protocol 3's built-in rows relabelled (same regions, same TEST episodes)."""
    from dreamer_gym.envs.bank_context import REGION_CONTEXT_FEATURES

    (tmp_path / "tracks").mkdir()
    shutil.copy(Path(__file__).parent.parent / "research" / "tracks" / "scienceworld-v4.yaml",
                tmp_path / "tracks" / "scienceworld.yaml")
    staged = builtin_rows(tmp_path / "results") / "scienceworld"
    for path in staged.glob("*.json"):
        path.write_text(json.dumps({**json.loads(path.read_text()), "tier": "draft", "protocol_version": 4}))
    s = study(TrackLearnabilityConfig(track="scienceworld", bootstrap_resamples=50), archive=tmp_path)
    assert s["protocol"] == 4 and s["env_id"] == "MemoryConsolidation-ScienceWorld-v2" and s["regions"] == 160
    assert s["features"][-len(REGION_CONTEXT_FEATURES):] == list(REGION_CONTEXT_FEATURES)
    stumps = {p["model"]: p for p in s["feature_policies"]}
    assert set(REGION_CONTEXT_FEATURES) <= set(stumps)
    # a family region holds every entry of its family, so nothing of its task lies outside it: on the family track
    # the context is one value, and a stump on it plays one rule everywhere
    assert len({stumps[name]["value"] for name in REGION_CONTEXT_FEATURES}) == 1
