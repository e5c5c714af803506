"""Red team: attacks on the board's submission path (issue 29). Each test fails if its attack is accepted.

Fixtures are the committed submissions in ``leaderboards/submissions/`` (the oracle's banks are public there,
which is the point), refused before any re-score where the rule allows; the attacks that need a run (a fake
``fixed`` row, lowered invalid calls) run on one region of the real held-out alfworld-gen pool.
"""
from __future__ import annotations

import copy
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dreamer_gym.consolidators import make_consolidator
from dreamer_gym.leaderboard import Track, load_track
from dreamer_gym.leaderboard.rows import NAME_PATTERN, builtin_rule, check_name, check_row_free, check_verified_free
from dreamer_gym.leaderboard.submission import (
    SubmissionError,
    build_submission,
    consolidator_block,
    dumps,
    load_submission,
    run_for_submission,
)
from dreamer_gym.leaderboard.validate import NEAR_COPY, check_data, check_regions, validate
from dreamer_gym.memory import MemoryEntry

ROOT = Path(__file__).resolve().parents[2]
SUBMISSIONS = ROOT / "leaderboards" / "submissions"
RESULTS = ROOT / "leaderboards" / "results"
HONEST = ("blind", "consensus", "dedupe", "empty", "keep-all", "random", "oplevel-windows-seed0",
          "oplevel-windows-seed1", "oplevel-windows-seed2", "oplevel-windows-seed3", "oplevel-windows-seed4",
          "grpo-ops-seed0")  # the protocol-3 rows (the prompted row is archived: docs/leaderboard.md)


def committed(name: str) -> dict:
    return json.loads((SUBMISSIONS / f"{name}.json").read_text())


ORACLE = committed("oracle")


def as_contender(data: dict, name: str = "my-policy") -> dict:
    """A submission re-labelled as someone's contender, with a call log (what an attacker would send)."""
    out = copy.deepcopy(data)
    out["consolidator"].update(name=name, kind="contender", config={"consolidator": name})
    for region in out["tracks"][0]["regions"]:
        region.setdefault("calls", [])
    return out


def renew(entry: dict) -> None:
    entry["id"] = MemoryEntry.from_dict(entry).id


def strip_tags(data: dict) -> dict:
    for region in data["tracks"][0]["regions"]:
        for entry in region["emitted"]:
            if entry.get("tags"):
                entry["tags"] = []
                renew(entry)
    return data


def test_the_oracles_banks_with_their_tags_stripped_are_refused() -> None:
    attack = strip_tags(as_contender(ORACLE))
    with pytest.raises(SubmissionError, match=r"`tracks\[0\]\.regions\[0\]\.emitted\[\d+\]`: a copy of reference "
                                              r"'oracle''s entry e\w+ in region \(bank 0, family "):
        check_data(attack, references=[ORACLE])


def test_the_oracles_texts_plus_one_extra_entry_are_refused() -> None:
    attack = as_contender(ORACLE)
    for region in attack["tracks"][0]["regions"]:
        donor = region["emitted"][-1]
        extra = {**donor, "kind": "pitfall", "text": "Check the thermometer before you act; never guess.", "tags": []}
        renew(extra)
        region["emitted"].append(extra)
    with pytest.raises(SubmissionError, match=r"a copy of reference 'oracle''s entry .* flagged regions \[0, 1, 2"):
        check_data(attack, references=[ORACLE])


def test_one_copied_region_among_honest_ones_is_refused() -> None:
    attack = as_contender(committed("oplevel-windows-seed0"))
    attack["tracks"][0]["regions"][5]["emitted"] = copy.deepcopy(ORACLE["tracks"][0]["regions"][5]["emitted"])
    with pytest.raises(SubmissionError, match=r"`tracks\[0\]\.regions\[5\]\.emitted\[\d+\]`: a copy .* flagged "
                                              r"regions \[5\]"):
        check_data(attack, references=[ORACLE])


def test_no_honest_built_in_is_flagged_and_the_margin_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The committed honest rows pass the copy check, and their closest new entry to an oracle entry stays
    0.1 below NEAR_COPY (measured: 0.51 on protocol 2's 12 regions, 0.56 on protocol 3's 160 regions x 12 rows
    against 0.7: the closest honest entry creeps up as the track grows). The region check and the copy check that
    check_data runs, without its schema check (2/3 of the time, issue 40: CI time; the attacks above run it whole)."""
    import dreamer_gym.pool
    from dreamer_gym.leaderboard.copy_check import _overlap, _words, check_not_a_reference_copy

    # the same real pool for the 12 rows: check_regions loads it from disk on each call (~1 s), read only
    monkeypatch.setattr(dreamer_gym.pool, "load_or_build_pool", functools.cache(dreamer_gym.pool.load_or_build_pool))
    track = load_track("scienceworld")
    worst = 0.0
    for name in HONEST:
        data = as_contender(committed(name), f"honest-{name}")
        ids = check_regions(0, track, data["tracks"][0])
        check_not_a_reference_copy(0, track, data["tracks"][0], [ORACLE], ids)
        for j, (region, ref) in enumerate(zip(data["tracks"][0]["regions"], ORACLE["tracks"][0]["regions"])):
            theirs = [_words(e["text"]) for e in ref["emitted"] if e["id"] not in ids[j]]
            for entry in region["emitted"]:
                if entry["id"] not in ids[j]:
                    worst = max([worst, *(_overlap(_words(entry["text"]), w) for w in theirs)])
    assert 0.3 < worst <= NEAR_COPY - 0.1, worst


def test_a_name_that_takes_a_built_in_rows_file_is_refused() -> None:
    attack = as_contender(committed("dedupe"), "dedupe!")
    with pytest.raises(SubmissionError, match=r"`consolidator\.name`: 'dedupe!' is the name \(file dedupe\.json\) of "
                                              r"the built-in row 'dedupe'"):
        check_data(attack, references=[ORACLE])


def test_a_results_file_of_another_submission_is_never_overwritten(tmp_path: Path) -> None:
    held = tmp_path / "scienceworld" / "my-policy.json"
    held.parent.mkdir()
    held.write_text((RESULTS / "scienceworld" / "dedupe.json").read_text())
    with pytest.raises(SubmissionError, match=rf"'my-policy!' would overwrite {held}, the row of 'dedupe' from another "
                                              r"submission"):
        check_row_free(held, "my-policy!", "0" * 64)
    with pytest.raises(SubmissionError, match="would overwrite"):  # a built-in rule replaces only its own rule's row
        check_row_free(held, "keep-all", "0" * 64, builtin="keep-all")
    check_row_free(held, "dedupe", json.loads(held.read_text())["submission_sha256"])  # the same submission: its own file
    check_row_free(held, "dedupe", "0" * 64, builtin="dedupe")  # `make board`: the board re-runs dedupe itself


# look-alikes of built-in rows (issue 38): a Cyrillic е (U+0435), fullwidth letters (U+FF44...), and the ASCII
# names that the slug would otherwise keep apart from the rows they imitate
LOOK_ALIKES = ("d\u0435dupe", "\uff44\uff45\uff44\uff55\uff50\uff45", "oracl\u0435", "\uff52\uff55\uff4c\uff45:merge-all",
               "Oracle-2", "my policy", "_dedupe", "grpo:runs/x/checkpoint-5", "k\u0435ep-all")


def test_each_look_alike_name_is_refused_before_any_rescore_with_a_name_that_passes() -> None:
    dedupe = committed("dedupe")
    dedupe["tracks"][0]["regions"][1:] = []  # one region: the name is refused before the regions are read (CI time)
    for name in LOOK_ALIKES:
        attack = as_contender(dedupe, name)
        with pytest.raises(SubmissionError, match=r"^`consolidator\.name`: .* is not a row name: a row name matches "
                                                  r"\[a-z0-9\]\[a-z0-9:\._-\]\* \(ASCII lower case.*; try '") as caught:
            check_data(attack, references=[ORACLE])  # the checks before any re-score
        message = str(caught.value)
        assert "\n" not in message, name
        suggestion = message.rsplit("try ", 1)[1].strip("'")
        assert check_name(suggestion) == suggestion, (name, suggestion)
        assert builtin_rule(as_contender(dedupe, suggestion)["consolidator"]) is None  # no built-in's


def test_every_committed_row_name_is_a_row_name() -> None:
    """The rule refuses no row on the board: every name in the submissions and results files passes (the
    archived protocol-2 names, `oplevel (seed 0)`, are never validated again and keep theirs)."""
    names = {data["consolidator"]["name"] for path in sorted(ROOT.glob("leaderboards/**/*.json"))
             if "archive" not in path.parts for data in [json.loads(path.read_text())]
             if isinstance(data, dict) and isinstance(data.get("consolidator"), dict)}
    assert len(names) >= 25 and [n for n in names if not NAME_PATTERN.fullmatch(n)] == []


def test_a_verified_file_of_another_submission_is_never_overwritten(tmp_path: Path) -> None:
    """`leaderboard verify` writes NAME.verified.json; only a re-verification of the same name and consolidator
    replaces it, and a verified run never attaches to another consolidator's re-scored row."""
    def block(name: str, rule: str, kind: str = "contender") -> dict:
        return {"name": name, "kind": kind, "config": {"consolidator": rule}}

    held = tmp_path / "scienceworld" / "my-policy.verified.json"
    held.parent.mkdir()
    held.write_text(json.dumps({"tier": "verified", "consolidator": block("my-policy", "mine")}))
    for name, rule in (("my--policy", "mine"), ("my:policy.", "other"), ("my-policy", "other")):
        with pytest.raises(SubmissionError, match=rf"'{re.escape(name)}' would overwrite {re.escape(str(held))}, the "
                                                  r"row of 'my-policy' running 'mine', not '"):
            check_verified_free(tmp_path, "scienceworld", block(name, rule))
    assert check_verified_free(tmp_path, "scienceworld", block("my-policy", "mine")) == held  # its own file
    row = tmp_path / "scienceworld" / "grpo-ops-seed0.json"
    row.write_text((RESULTS / "scienceworld" / "grpo-ops-seed0.json").read_text())
    with pytest.raises(SubmissionError, match=r"would be the verified run of .*grpo-ops-seed0\.json, the row of "
                                              r"'grpo-ops-seed0' running 'grpo:runs/grpo-smollm2-ops/checkpoint-5'"):
        check_verified_free(tmp_path, "scienceworld", block("grpo-ops-seed0", "dedupe"))
    with pytest.raises(SubmissionError, match=r"'dedupe' is the name \(file dedupe\.json\) of the built-in row"):
        check_verified_free(tmp_path, "scienceworld", block("dedupe", "mine"))
    with pytest.raises(SubmissionError, match="is not a row name"):
        check_verified_free(tmp_path, "scienceworld", block("d\u0435dupe", "mine"))
    before = held.read_bytes()
    out = subprocess.run([sys.executable, "-m", "dreamer_gym.cli", "leaderboard", "verify", "--consolidator",
                          "dedupe", "--kind", "contender", "--track", "scienceworld", "--name", "my-policy", "--out-dir", str(tmp_path),
                          "--quiet"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and "verification refused: `consolidator.name`: 'my-policy' would overwrite" in out.stderr
    assert held.read_bytes() == before


def test_a_learned_row_submitted_as_fixed_is_refused_before_any_rescore() -> None:
    grpo = committed("grpo-ops-seed0")
    for region in grpo["tracks"][0]["regions"]:
        region["calls"] = []
    attack = copy.deepcopy(grpo)
    attack["consolidator"]["kind"] = "fixed"
    with pytest.raises(SubmissionError, match=r"`consolidator\.kind`: 'fixed' is for the package's fixed rules .* this "
                                              r"submission ran 'grpo:runs/grpo-smollm2-ops/checkpoint-5'"):
        check_data(attack, references=[ORACLE])
    attack["consolidator"]["config"] = {"consolidator": "dedupe"}  # claims the rule, keeps its own name
    with pytest.raises(SubmissionError, match=r"a built-in fixed row is named as its rule, 'dedupe'"):
        check_data(attack, references=[ORACLE])
    attack["consolidator"].update(name="empty", kind="contender", config={"consolidator": "grpo"})  # the anchor's name
    with pytest.raises(SubmissionError, match=r"'empty' is the name \(file empty\.json\) of the built-in row 'empty'"):
        check_data(attack, references=[ORACLE])


# -- bad files: refused by load_submission before anything reads their meaning


def test_bad_bytes_depth_size_and_numbers_are_one_line_refusals(tmp_path: Path) -> None:
    cases = {
        "latin1.json": (b'{"consolidator": "caf\xe9"}', r"not UTF-8 \(byte 0xe9 at offset 21\)"),
        "deep.json": (b"[" * 100_000 + b"]" * 100_000, r"nested deeper than 32 levels"),
        "deep-config.json": (b'{"config": ' + b'{"a": ' * 40 + b"1" + b"}" * 41, r"`config(\.a)+`: nested deeper than 32"),
        "nan.json": (b'{"consolidator": {"config": {"lr": NaN}}}', r"not finite \(NaN\)"),
        "inf.json": (b'{"x": 1e999}', r"not finite \(1e999\)"),
    }
    for name, (raw, message) in cases.items():
        (tmp_path / name).write_bytes(raw)
        with pytest.raises(SubmissionError, match=message) as caught:
            load_submission(tmp_path / name)
        assert "\n" not in str(caught.value), name


def test_a_200_mb_file_is_refused_by_its_size_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(200 * 2**20)  # sparse: 200 MB on paper, nothing written
    with pytest.raises(SubmissionError, match=r"huge\.json: 209715200 bytes; a submission is at most 20971520 bytes"):
        load_submission(path)


def test_nan_handed_over_as_python_data_is_refused_before_the_rescore() -> None:
    data = as_contender(committed("dedupe"))
    data["consolidator"]["config"]["lr"] = float("nan")
    with pytest.raises(SubmissionError, match=r"`consolidator\.config\.lr`: nan is not a finite number"):
        check_data(data, references=[ORACLE])


def test_validate_from_another_folder_finds_the_references_and_says_which(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(dumps(strip_tags(as_contender(ORACLE))))
    out = subprocess.run([sys.executable, "-m", "dreamer_gym.cli", "leaderboard", "validate", str(path), "--out-dir",
                          str(tmp_path / "results"), "--quiet"], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    assert f"copy check on track 'scienceworld': against ['oracle.json'] in {SUBMISSIONS}" in out.stderr
    assert "rejected:" in out.stderr and "a copy of reference 'oracle''s entry" in out.stderr
    assert not (tmp_path / "results").exists()


# -- attacks that need a run: one region of the real held-out alfworld-gen pool, one evaluation episode (a track run
# without a JVM; the checks under attack are the same on every suite)


def tiny() -> Track:
    track = load_track("alfworld-gen")
    return Track(**{**track.__dict__, "name": "tiny-red", "families": track.families[:1], "banks": (0,),
                    "eval_in_family": 1, "eval_other": 0})


TINY = {"tiny-red": tiny()}


@pytest.fixture(scope="module")
def honest() -> dict:
    """dedupe's submission on the tiny track, as someone's contender: the attacker's own run (an in-process service:
    what the attacker ran on its machine is not under test), which each attack below edits."""
    track = TINY["tiny-red"]
    result = run_for_submission(track, make_consolidator("dedupe"), progress=False, service="inprocess")
    return json.loads(dumps(build_submission(consolidator_block("my-policy", kind="contender",
                                                                config={"consolidator": "dedupe"}), [(track, result)])))


def test_a_fake_empty_anchor_is_refused_by_the_rules_rerun(honest: dict) -> None:
    """dedupe's banks submitted as the `empty` rule (the normalisation anchor): the board re-runs `empty`."""
    attack = copy.deepcopy(honest)
    attack["consolidator"].update(name="empty", kind="fixed", config={"consolidator": "empty"})
    with pytest.raises(SubmissionError, match=r"`regions\[0\]\.emitted`: the package's 'empty' rule, re-run, commits "
                                              r"entries \[\], the submission lists \['e"):
        validate(attack, extra_tracks=TINY, progress=False)


def test_lowered_invalid_calls_are_counted_by_the_replay_of_the_calls(honest: dict, tmp_path: Path) -> None:
    """One invalid call sent first; the submission claims none and the reward without its penalty. Both validations
    replay the same calls onto the same banks: the second is served from the first's evaluation cache."""
    honest = copy.deepcopy(honest)
    region = honest["tracks"][0]["regions"][0]
    region["calls"].insert(0, "this is not a tool call")
    region["tool_calls"] += 1
    attack = copy.deepcopy(honest)  # invalid_calls 0 and the reward unchanged: the lowered count and raised claim
    with pytest.raises(SubmissionError, match=r"`regions\[0\]\.invalid_calls`: the submission claims 0, the replay of "
                                              r"the submitted calls made 1"):
        validate(attack, extra_tracks=TINY, progress=False, cache=tmp_path)
    region["invalid_calls"] = 1
    region["claimed"]["reward"] -= TINY["tiny-red"].invalid_penalty
    honest["tracks"][0]["claimed"]["score"] -= TINY["tiny-red"].invalid_penalty / len(honest["tracks"][0]["regions"])
    [record] = validate(honest, extra_tracks=TINY, progress=False, cache=tmp_path)  # the true count is accepted, and paid
    assert record["records"][0]["invalid_calls"] == 1 and "builtin" not in record
