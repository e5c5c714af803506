"""The learnability study as a long run: its log (a cut run resumes to the records of one uninterrupted run, a
truncated last line is cut off, another config is refused naming the field, one writer at a time), the partial
tables of ``--summarise-only``, and the cross-fit on disjoint halves of each region's variations, on real
ScienceWorld commits."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dreamer_gym.errors import ConfigError
from dreamer_gym.studies.folds import episode_reward, fold_map
from dreamer_gym.studies.learnability import (
    EPISODE_FIELDS,
    LOG_NAME,
    LearnabilityConfig,
    collect,
    run,
    summarise_log,
    variation_folds,
)
from dreamer_gym.studies.record_log import RecordLog, open_log
from warm_executor import warm_executor

ROOT = Path(__file__).resolve().parents[1]
# two family regions, two rules, one draw, cross-fitted on halves of the variations, each commit scored on one
# in-family episode and one of another family (the id's 3 + 2 cut: nothing here needs the id's reward): the smallest
# real study
SMALL = LearnabilityConfig(env_id="MemoryConsolidation-ScienceWorld-v1", families=("use-thermometer",), banks=(0, 1),
                           rules=("keep-all", "empty"), draws=1, fold_by="variation", bootstrap_resamples=200,
                           env_kwargs={"eval_in_family": 1, "eval_other": 1})


def without_timing(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def test_a_cut_last_line_is_left_out_and_cut_off_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    with open_log(path, {"config": {"rules": ("a", "b")}, "regions": []}) as log:
        log.append({"kind": "record", "n": 1})
    with path.open("ab") as f:
        f.write(b'{"kind": "record", "n": 2, "epis')  # what a run killed mid-write leaves
    read = RecordLog.read(path)
    assert read is not None and read.header["config"] == {"rules": ["a", "b"]} and read.of_kind("record") == [
        {"kind": "record", "n": 1}]
    with open_log(path, read.header) as log:
        log.append({"kind": "record", "n": 3})
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line.get("n") for line in lines] == [None, 1, 3]  # the header kept, the cut line gone


def test_one_writer_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    with open_log(path, {"config": {}}):
        with pytest.raises(ConfigError, match="being written by another run"):
            with open_log(path, {"config": {}}):
                pass


def test_another_config_is_refused_naming_the_fields(tmp_path: Path) -> None:
    with open_log(tmp_path / "records.jsonl", {"config": {"rules": ["a", "b"], "draws": 2, "seed": 0}}):
        pass
    log = RecordLog.read(tmp_path / "records.jsonl")
    assert log is not None
    log.check({"rules": ("a", "b"), "draws": 2, "seed": 0})  # tuples and lists are the same config
    with pytest.raises(ConfigError, match=r"`draws`: the log has 2, this run 1; `seed`: the log has 0, this run 3"):
        log.check({"rules": ("a", "b"), "draws": 1, "seed": 3})


def test_folds_carried_across_families_balance_one_variation_families() -> None:
    # a window's region: two tasks of many variations, and other-family episodes of one variation each
    episodes = [("own-a", v) for v in range(5)] + [("own-b", v) for v in range(4)] + [(f"x{i}", 0) for i in range(6)]
    plain, carried = fold_map(episodes, 2, seed=0), fold_map(episodes, 2, seed=0, carry=True)
    assert all(plain[(f"x{i}", 0)] == 0 for i in range(6))  # each family's deal starts at fold 0
    counts = np.bincount(list(carried.values()), minlength=2)
    assert abs(counts[0] - counts[1]) <= 1 and len(carried) == len(set(episodes))
    assert sorted(v for (f, v), k in carried.items() if f == "own-a") == list(range(5))


def test_variation_folds_allow_one_draw_and_draw_folds_do_not() -> None:
    assert LearnabilityConfig(fold_by="variation", draws=1).draws == 1
    with pytest.raises(ConfigError, match="with `fold_by` variation .* 1 draw is enough"):
        LearnabilityConfig(draws=1)
    with pytest.raises(ConfigError, match="Expected `fold_by` to be one of"):
        LearnabilityConfig(fold_by="episode")


def test_the_command_takes_the_long_run_flags() -> None:
    from dreamer_gym.cli import build_parser

    args = build_parser().parse_args(["learnability", "--fold-by", "variation", "--draws", "1", "--max-jobs", "5",
                                      "--summarise-only", "--out", "x"])
    assert (args.max_jobs, args.summarise_only, vars(args)["learnability.fold_by"]) == (5, True, "variation")


@pytest.fixture()
def study() -> Iterator[LearnabilityConfig]:
    """SMALL on an in-process service whose three runs (whole, cut, resumed) play on one warm simulator: the log
    is under test here, not the service's isolation (both are free fields: the records are the same)."""
    with warm_executor() as executor:
        yield replace(SMALL, env_kwargs={**SMALL.env_kwargs, "service": "inprocess", "executor": executor})


@pytest.mark.jvm
def test_a_cut_study_resumes_to_the_records_of_one_uninterrupted_run(tmp_path: Path, study: LearnabilityConfig) -> None:
    whole = run(study, tmp_path / "whole", progress=False)
    assert whole["progress"]["complete"] and whole["regions"] == 2

    cut = tmp_path / "cut"
    assert run(study, cut, progress=False, max_jobs=3) == {"progress": {
        "records": 3, "jobs": 4, "regions": 1, "of_regions": 2, "complete": False}}
    assert not (cut / "learnability.json").exists()  # the tables wait for every job
    with (cut / LOG_NAME).open("ab") as f:
        f.write(b'{"kind":"record","family":"use-thermo')  # killed mid-write
    with pytest.raises(ConfigError, match=r"`rules`: the log has \[\"keep-all\", \"empty\"\], this run"):
        run(replace(study, rules=("keep-all", "dedupe")), cut, progress=False)  # refused before the simulator
    resumed = run(study, cut, progress=False)
    got, want = (json.loads((d / "learnability.json").read_text()) for d in (cut, tmp_path / "whole"))
    assert without_timing(got["records"]) == without_timing(want["records"]) and len(got["records"]) == 4
    assert got["regions"] == want["regions"] and resumed["gap"] == whole["gap"]
    assert all(len(e) == len(EPISODE_FIELDS) for r in got["records"] for e in r["episodes"])

    # the cross-fit on disjoint halves of each region's variations: the halves share no variation, and together
    # they give back the record's reward (their rewards weighted by their episode counts)
    records = got["records"]
    table, split = variation_folds(records, [("use-thermometer", 0), ("use-thermometer", 1)], list(study.rules), 1, 0)
    assert whole["folds"]["episodes_per_fold"] == split["episodes_per_fold"] and min(split["episodes_per_fold"]) > 0
    for i, bank in enumerate((0, 1)):
        for j, rule in enumerate(study.rules):
            (rec,) = [r for r in records if (r["bank"], r["rule"]) == (bank, rule)]
            eps = [dict(zip(EPISODE_FIELDS, e)) for e in rec["episodes"]]
            folds = fold_map([(e["family"], e["variation"]) for e in eps], 2, seed=0, carry=True)
            halves = [[e for e in eps if folds[(e["family"], e["variation"])] == k] for k in range(2)]
            assert not {(e["family"], e["variation"]) for e in halves[0]} & {(e["family"], e["variation"]) for e in
                                                                            halves[1]}
            assert table[i, j].tolist() == [episode_reward(h, rec["size"]) for h in halves]
            back = sum(len(h) * (table[i, j, k] - rec["size"]) for k, h in enumerate(halves)) / len(eps) + rec["size"]
            assert back == pytest.approx(rec["reward"], abs=1e-12)

    # --summarise-only on a log whose study is not done: the complete regions' tables, labelled partial
    partial = tmp_path / "partial"
    lines = (cut / LOG_NAME).read_text().splitlines()
    header = json.loads(lines[0])
    header["regions"].append(["use-thermometer", 2])  # a third region with no record yet
    partial.mkdir()
    (partial / LOG_NAME).write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    summary = summarise_log(partial, replace(study, draws=3), given=())  # the log's study, not the config's
    assert summary["progress"] == {"records": 4, "jobs": 6, "regions": 2, "of_regions": 3, "complete": False}
    assert summary["gap"] == whole["gap"] and summary["draws"] == 1
    assert (partial / "learnability.md").read_text().startswith("**Partial**: 2 of 3 regions complete (4 of 6")
    with pytest.raises(ConfigError, match="`banks`: the log has"):
        summarise_log(partial, replace(study, banks=(5, 6)), given=("banks",))


@pytest.mark.heavy
@pytest.mark.jvm
def test_a_killed_command_resumes_to_the_records_of_one_uninterrupted_run(tmp_path: Path) -> None:
    """The command killed (SIGKILL, no cleanup) after its first records, rerun: the records of one run."""
    config = replace(SMALL, banks=(0, 1, 2))
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "dreamer_gym.cli", "learnability", "--env", config.env_id, "--families",
           "use-thermometer", "--banks", "0", "1", "2", "--rules", "keep-all", "empty", "--draws", "1", "--fold-by",
           "variation", "--bootstrap-resamples", "200", "--env-kwargs", json.dumps(config.env_kwargs),
           "--out", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and proc.poll() is None:
            log = RecordLog.read(out / LOG_NAME) if (out / LOG_NAME).exists() else None
            if log is not None and len(log.of_kind("record")) >= 2:
                break
            time.sleep(0.2)
        assert proc.poll() is None, "the command ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert not (out / "learnability.json").exists()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    want = collect(config, progress=False)
    got = json.loads((out / "learnability.json").read_text())
    assert without_timing(got["records"]) == without_timing(want["records"]) and len(want["records"]) == 6
    shutil.rmtree(out)
