"""The try-out track, track files on the leaderboard commands, and docs/start-submitter.md kept in step with them,
without installing anything (tests/test_wheel_submitter.py runs the page from a wheel: heavy, minutes).

The cheap half (no simulator): the track is the `scienceworld` setting on one bank and never ranked; its shipped
reference passes every data check; the page's commands parse with the commands' own parser and state the shipped
reference's score; a submission on a track file is found by `validate --track FILE` and rejected with the field when
the file differs. One real run (~20 s): submit -> validate -> render on a one-region track file through the commands'
handlers, so a track file's row is re-scored and listed apart on the page, never ranked.
"""
from __future__ import annotations

import argparse
import copy
import re
import shlex
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard import board_commands
from dreamer_gym.leaderboard.submission import SubmissionError, shipped_references
from dreamer_gym.leaderboard.tracks import (TRYOUT_TRACKS, is_ranked_track, load_board_track, load_track,
                                            write_track_file)
from dreamer_gym.leaderboard.validate import check_data
from test_wheel_submitter import page_blocks  # the page's blocks as the wheel test runs them

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "start-submitter.md"


def parser() -> argparse.ArgumentParser:
    """`dreamer-gym`'s leaderboard subcommands, from their own module (the CLI adds the same parser)."""
    p = argparse.ArgumentParser(prog="dreamer-gym")
    board_commands.add_parser(p.add_subparsers(dest="command", required=True))
    return p


def oracle_reference() -> dict:
    [(_, data)] = [(p, d) for p, d in shipped_references() if d["tracks"][0]["track"] == "tryout"]
    return data


# --- the track ------------------------------------------------------------------------------------------------
def test_tryout_is_the_scienceworld_setting_on_one_bank_and_never_ranked() -> None:
    tryout, full = load_track("tryout"), load_track("scienceworld")
    assert tryout.families == full.families and tryout.banks == (0,)
    assert (tryout.eval_in_family, tryout.eval_other) == (5, 2)
    own = {"name", "description", "banks", "seed", "mdd", "eval_in_family", "eval_other"}
    same = {k: v for k, v in full.data().items() if k not in own}
    assert {k: tryout.data()[k] for k in same} == same  # pool, budgets, agent, reward: the scienceworld track's
    assert "tryout" in TRYOUT_TRACKS and not is_ranked_track("tryout") and is_ranked_track("scienceworld")
    assert not is_ranked_track("my-track")  # not shipped: validated, never ranked


def test_the_shipped_reference_passes_every_data_check() -> None:
    """The package's own reference for the try-out track: schema, frozen fields, regions and seeds, provenance and
    budgets (checks 1-4; the wheel test re-scores it)."""
    data = oracle_reference()
    assert data["consolidator"]["kind"] == "reference" and data["consolidator"]["name"] == "oracle"
    [checked] = check_data(copy.deepcopy(data))
    assert checked.track == load_track("tryout") and len(checked.block["regions"]) == 4


# --- the page -------------------------------------------------------------------------------------------------
def test_the_page_commands_parse_and_state_the_shipped_references_score() -> None:
    blocks = page_blocks()
    assert len(blocks) >= 5 and any(not run for _, run in blocks)
    for body, _ in blocks:
        proc = subprocess.run(["bash", "-n"], input=body, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"docs/start-submitter.md: a bash block does not parse: {proc.stderr}\n{body}"
    commands = [shlex.split(line) for body, _ in blocks for line in body.splitlines()
                if line.startswith("dreamer-gym leaderboard ")]
    assert {c[2] for c in commands} >= {"submit", "validate", "render", "verify"}
    for command in commands:
        parser().parse_args(command[1:])  # exits (SystemExit) on a flag the command does not take
    assert ["dreamer-gym", "leaderboard", "submit", "--consolidator", "my-procedures", "--track", "tryout"] in commands
    text = PAGE.read_text()
    claimed = oracle_reference()["tracks"][0]["claimed"]["score"]
    assert f"**{claimed:+.4f}**" in text, "docs/start-submitter.md does not state the shipped reference's score"
    [(expected, _)] = page_blocks("text")
    assert re.search(r"^accepted \(re-scored\): tryout: score [+-]\d\.\d{4} .*\(try-out, not ranked\)$", expected,
                     flags=re.M), expected


# --- track files ----------------------------------------------------------------------------------------------
def test_a_track_file_may_not_change_a_shipped_track_under_its_name(tmp_path: Path) -> None:
    tryout = load_track("tryout")
    assert load_board_track(write_track_file(tryout, tmp_path / "same.yaml")) == tryout
    changed = write_track_file(replace(tryout, seed=1), tmp_path / "changed.yaml")
    with pytest.raises(ConfigError, match=r"named 'tryout', a shipped track, but changes \['seed'\]"):
        load_board_track(changed)


def test_validate_finds_a_track_file_by_its_definition(tmp_path: Path) -> None:
    """A submission on a track the package does not ship: unknown without --track (the rejection names it), found
    with the file, and rejected with the field where the file is not the submission's definition."""
    mine = replace(load_track("tryout"), name="my-track")
    data = oracle_reference()
    block = data["tracks"][0]
    block["track"] = block["frozen"]["name"] = "my-track"
    with pytest.raises(SubmissionError, match=r"unknown track 'my-track'.*validated with `--track FILE`"):
        check_data(copy.deepcopy(data))
    extra = board_commands.track_files([str(write_track_file(mine, tmp_path / "my-track.yaml"))])
    check_data(copy.deepcopy(data), extra)
    other = board_commands.track_files([str(write_track_file(replace(mine, seed=7), tmp_path / "other.yaml"))])
    with pytest.raises(SubmissionError, match=r"`tracks\[0\]\.frozen\.seed`: changed frozen field"):
        check_data(copy.deepcopy(data), other)


def test_validate_reads_the_packages_references_beside_its_folder(tmp_path: Path) -> None:
    """From a wheel there is no leaderboards/submissions: the try-out track's reference comes with the package; a
    track with none anywhere is refused with the command that writes one."""
    data = oracle_reference()
    data["consolidator"] = {**data["consolidator"], "name": "mine", "kind": "contender"}
    refs = board_commands.load_references(tmp_path, tmp_path / "mine.json", data)
    assert [r["tracks"][0]["track"] for r in refs] == ["tryout"]
    data["tracks"][0]["track"] = "my-track"
    with pytest.raises(ConfigError, match=r"no reference submission for track 'my-track'.*--consolidator oracle "
                                          r"--track my-track"):
        board_commands.load_references(tmp_path, tmp_path / "mine.json", data)


@pytest.mark.jvm
def test_submit_validate_render_on_a_track_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The commands' handlers, as the CLI calls them, on a one-region track file: its row is re-scored to its claim
    and the page lists it apart, never ranked."""
    path = write_track_file(replace(load_track("tryout"), name="my-track", families=("lifespan-longest-lived",),
                                    eval_in_family=1, eval_other=0), tmp_path / "my-track.yaml")
    board = tmp_path / "board"

    def run(*argv: str) -> int:
        args = parser().parse_args(["leaderboard", *argv])
        return args.func(args)

    assert run("submit", "--consolidator", "oracle", "--track", str(path), "--out", str(tmp_path / "oracle.json"),
               "--quiet") == 0
    claimed = capsys.readouterr().out
    common = ("--out-dir", str(board / "results"), "--references", str(tmp_path / "refs"), "--no-cache", "--quiet")
    (tmp_path / "refs").mkdir()
    assert run("validate", str(tmp_path / "oracle.json"), *common) == 1  # without the file: rejected, naming --track
    assert "validated with `--track FILE`" in capsys.readouterr().err
    assert run("validate", str(tmp_path / "oracle.json"), "--track", str(path), *common) == 0
    accepted = capsys.readouterr().out
    score = re.search(r"my-track: score ([+-]\d\.\d{4})", claimed).group(1)
    assert f"accepted (re-scored): my-track: score {score}" in accepted and "never ranked" in accepted
    assert run("render", "--results", str(board / "results"), "--out", str(board)) == 0
    readme = (board / "README.md").read_text()
    assert "### Track `my-track`" not in readme  # no board: no rank, CI or comparison
    row = f"| my-track | oracle | reference | re-scored | {score} |"
    assert row in readme and "not a shipped track: validated, never ranked |" in readme
    assert 'id="unranked"' in (board / "index.html").read_text()
