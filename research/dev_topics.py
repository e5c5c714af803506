"""Which ScienceWorld topics can a DEV track hold? (issue 31, item 3; issue 30 wants held-out families too)

A DEV track needs held-out topics of its own: not the training topics (measurement, electricity,
classification, grow, chemistry) and not the test track's (lifespan, life stages). A family is usable only
where the deterministic memory-following agent can show what memory is worth:

(a) the oracle's abstract procedure scores clearly above keep-all (raw memory);
(b) raw memory written by acquisition on TRAIN variations is worth something (keep-all above empty);
(c) enough DEV and TEST variations (10 or more each) for a track to draw from.

Three steps, each reproducible on its own:

* ``list``: every ScienceWorld task with its topic, variation counts per split and the gold path lengths
  of its first TRAIN/DEV/TEST variation (the suite's agent plays at most 80 steps, the simulator 100);
* ``build``: a held-out-style pool of the candidate families on fresh bank seeds (no shipped pool uses
  them), the same acquisition as ``dreamer-gym acquire --held-out``;
* ``measure``: per family and bank, keep-all, empty, oracle and dedupe committed on the same DEV draw.

``python -m research.dev_topics --out research/results/issue31/dev-topics --pool /tmp/devt/pool.json.gz``
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from dreamer_gym.suites.scienceworld import FAMILIES, HELD_OUT_FAMILIES, TOPICS

# the candidates measured: the cheap families of the topics no pool holds (gold paths within the agent's
# 80 steps); friction-unnamed (108-192 steps) and mendelian genetics (145-150) are listed but not played
CANDIDATES: tuple[str, ...] = (
    "boil", "melt", "freeze", "change-the-state-of-matter-of",
    "inclined-plane-determine-angle", "inclined-plane-friction-named-surfaces",
)
CONSOLIDATORS: tuple[str, ...] = ("keep-all", "empty", "oracle", "dedupe")
AGENT_MAX_STEPS = 80  # the scienceworld SuiteSpec's agent_max_steps


@dataclass(frozen=True)
class Thresholds:
    """What a family must show to be usable (the brief's (a)-(c))."""

    oracle_margin: float = 5.0  # (a) oracle minus keep-all, mean DEV score points
    raw_margin: float = 2.0  # (b) keep-all minus empty, mean DEV score points
    min_variations: int = 10  # (c) DEV and TEST variations each


@dataclass(frozen=True)
class StudyConfig:
    families: tuple[str, ...] = CANDIDATES
    seeds: tuple[int, ...] = field(default=(300, 301), metadata={"help": "bank seeds no shipped pool uses"})
    eval_in_family: int = 5
    eval_variations: int = 12  # DEV/TEST task texts kept in the pool per family
    gold_variations: int = 4
    thresholds: Thresholds = field(default_factory=Thresholds)


# --- pure parts (tests/test_dev_topics.py) ---------------------------------------------------------------
def sw_tasks() -> list[dict[str, str]]:
    """ScienceWorld's own task table (``task_id`` "1-1", ``task_name`` "boil", ...), shipped with the package."""
    import scienceworld

    return json.loads((Path(scienceworld.__file__).parent / "tasks.json").read_text())


def topic_of(task_id: str, name: str, tasks: Sequence[Mapping[str, str]],
             known: Mapping[str, str] = TOPICS) -> str:
    """The project's topic of a task: ScienceWorld's major task number, named as ``TOPICS`` names it (a task
    not in ``TOPICS`` takes the name of a sibling with the same major number, else ``topic <n>``)."""
    if name in known:
        return known[name]
    major = task_id.split("-")[0]
    for task in tasks:
        if task["task_id"].split("-")[0] == major and task["task_name"] in known:
            return known[task["task_name"]]
    return f"topic {major}"


def excluded_topics(known: Mapping[str, str] = TOPICS) -> dict[str, str]:
    """topic -> why it is out: the training pool's topics and the test track's."""
    out = {known[f]: "training" for f in FAMILIES}
    out.update({known[f]: "test track" for f in HELD_OUT_FAMILIES})
    return out


def verdict(counts: Mapping[str, int], gold: Mapping[str, int], scores: Mapping[str, float] | None,
            th: Thresholds = Thresholds()) -> list[str]:
    """Which of (a)-(c) a family fails (empty: usable). ``counts``/``gold``: per split; ``scores``: mean DEV
    score per consolidator, or None when it was not played."""
    fails = []
    if gold.get("train", 0) > AGENT_MAX_STEPS:  # what memory can teach: a DEV/TEST path's extra steps are search
        fails.append(f"TRAIN gold path {gold['train']} steps > the agent's {AGENT_MAX_STEPS}")
    if scores is not None:
        if scores["oracle"] - scores["keep-all"] < th.oracle_margin:
            fails.append(f"(a) oracle - keep-all {scores['oracle'] - scores['keep-all']:+.1f} < {th.oracle_margin}")
        if scores["keep-all"] - scores["empty"] < th.raw_margin:
            fails.append(f"(b) keep-all - empty {scores['keep-all'] - scores['empty']:+.1f} < {th.raw_margin}")
    short = [s for s in ("dev", "test") if counts.get(s, 0) < th.min_variations]
    if short:
        fails.append("(c) " + ", ".join(f"{counts[s]} {s.upper()}" for s in short) + f" < {th.min_variations}")
    return fails


def summarize(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """family -> consolidator -> mean score (after), mean reward, n (regions) from ``measure``'s rows."""
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        grouped.setdefault((r["family"], r["consolidator"]), []).append(r)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for (family, name), rs in sorted(grouped.items()):
        out.setdefault(family, {})[name] = {
            "score": statistics.fmean(r["score_after"] for r in rs),
            "reward": statistics.fmean(r["reward"] for r in rs), "n": len(rs),
            "episodes": sum(r["episodes"] for r in rs)}
    return out


def markdown(listing: Sequence[Mapping[str, Any]], summary: Mapping[str, Mapping[str, Mapping[str, float]]],
             th: Thresholds = Thresholds()) -> str:
    """One row per listed task of a topic outside training and the test track."""
    cols = ("task", "topic", "train/dev/test", "gold (train/dev/test)",
            *(f"{c} score / reward" for c in CONSOLIDATORS), "n", "fails")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in listing:
        if row["excluded"]:
            continue
        fam = summary.get(row["task"])
        scores = {c: fam[c]["score"] for c in CONSOLIDATORS} if fam and all(c in fam for c in CONSOLIDATORS) else None
        cells = [f"{fam[c]['score']:.1f} / {fam[c]['reward']:+.3f}" if fam and c in fam else "-" for c in CONSOLIDATORS]
        n = f"{int(fam['oracle']['n'])} ({int(fam['oracle']['episodes'])} ep)" if fam and "oracle" in fam else "-"
        counts = {s: row[s] for s in ("train", "dev", "test")}
        gold = {s: row[f"gold_{s}"] for s in ("train", "dev", "test") if row.get(f"gold_{s}") is not None}
        fails = verdict(counts, gold, scores, th)
        lines.append("| " + " | ".join([
            row["task"], row["topic"], "/".join(str(counts[s]) for s in counts),
            "/".join(str(gold.get(s, "-")) for s in counts), *cells, n, "; ".join(fails) or "usable"]) + " |")
    return "\n".join(lines)


# --- JVM parts ------------------------------------------------------------------------------------------------
def list_tasks(gold_for: Iterable[str] = (), progress: bool = True) -> list[dict[str, Any]]:
    """Every ScienceWorld task: topic, whether its topic is excluded, variation counts; for ``gold_for``, the
    gold path length of the first TRAIN, DEV and TEST variation (mendelian's take ~20 s each)."""
    from dreamer_gym.suites.base import EpisodeTask
    from dreamer_gym.suites.scienceworld import ScienceWorldSuite

    tasks, out_topics, gold_for = sw_tasks(), excluded_topics(), set(gold_for)
    rows = []
    with ScienceWorldSuite() as suite:
        for task in tqdm(tasks, desc="tasks", disable=not progress):
            name = task["task_name"]
            topic = topic_of(task["task_id"], name, tasks)
            row: dict[str, Any] = {"task": name, "task_id": task["task_id"], "title": task["task"], "topic": topic,
                                   "excluded": out_topics.get(topic)}
            for split in ("train", "dev", "test"):
                variations = suite.variations(name, split)
                row[split] = len(variations)
                if name in gold_for:
                    row[f"gold_{split}"] = len(suite.gold_path(EpisodeTask(name, variations[0])))
            rows.append(row)
    return rows


def build(cfg: StudyConfig, out: Path, progress: bool = True) -> dict[str, Any]:
    """A held-out-style pool of ``cfg.families`` (rounds schedule, as ``acquire --held-out``)."""
    from dreamer_gym.pool import build_pool
    from dreamer_gym.suites.scienceworld import ScienceWorldSuite

    started = time.monotonic()
    with ScienceWorldSuite() as suite:
        pool = build_pool(suite, cfg.families, cfg.seeds, cfg.eval_variations, cfg.gold_variations, progress=progress)
    out.parent.mkdir(parents=True, exist_ok=True)
    pool.save(out)
    return {"pool": str(out), "hash": pool.hash, "banks": [len(b) for b in pool.banks],
            "seconds": round(time.monotonic() - started, 1),
            "train_gold": {f: sorted(len(p) for p in g.values()) for f, g in pool.train_gold.items()}}


def with_dev_topic_procedures() -> None:
    """Register, in this process only, the scienceworld spec whose oracle also knows the DEV-topic candidates
    (``DEV_TOPIC_PROCEDURES``; the shipped spec leaves them out so its red-team decoys do not move). The
    in-process reward service below sees it; a service in its own process would not."""
    import dataclasses

    from dreamer_gym.suites import get_suite_spec
    from dreamer_gym.suites.registry import register_suite
    from dreamer_gym.suites.scienceworld import DEV_TOPIC_PROCEDURES

    spec = get_suite_spec("scienceworld")
    if not set(DEV_TOPIC_PROCEDURES) <= set(spec.procedures):
        register_suite(dataclasses.replace(spec, procedures={**spec.procedures, **DEV_TOPIC_PROCEDURES}), replace=True)


def measure(cfg: StudyConfig, pool: Path, progress: bool = True) -> list[dict[str, Any]]:
    """Per family and bank: each consolidator committed on the same reset (same DEV episodes, paired)."""
    from dreamer_gym.consolidators import make_consolidator, run_episode
    from dreamer_gym.envs.consolidation import ConsolidationEnv

    with_dev_topic_procedures()
    env = ConsolidationEnv(suite="scienceworld", pool=str(pool), pool_hash=None, split="dev", service="inprocess",
                           eval_in_family=cfg.eval_in_family, eval_other=0)
    rows = []
    try:
        jobs = [(f, b, c) for f in cfg.families for b in range(len(cfg.seeds)) for c in CONSOLIDATORS]
        for family, bank, name in tqdm(jobs, desc="commits", disable=not progress):
            started = time.monotonic()
            info = run_episode(env, make_consolidator(name), seed=bank, options={"bank": bank, "family": family})
            rows.append({"family": family, "bank": bank, "consolidator": name, "reward": info["return"],
                         "score_before": info["score_before"], "score_after": info["score_after"],
                         "episodes": cfg.eval_in_family, "entries_before": info["size_before"]["entries"],
                         "entries_after": info["size_after"]["entries"],
                         "seconds": round(time.monotonic() - started, 1)})
    finally:
        env.close()
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--families", default=",".join(CANDIDATES), help="comma-separated candidate families")
    p.add_argument("--seeds", type=int, nargs="+", default=[300, 301], help="bank seeds (no shipped pool's)")
    p.add_argument("--eval-in-family", type=int, default=5)
    p.add_argument("--pool", type=Path, default=Path("/tmp/dev_topics/pool.json.gz"),
                   help="where the pool is built; reused when it exists")
    p.add_argument("--out", type=Path, required=True, help="folder for listing.json, measure.json, table.md")
    p.add_argument("--skip-list", action="store_true", help="reuse OUT/listing.json")
    p.add_argument("--table-only", action="store_true", help="redraw OUT/table.md from OUT's listing and measure")
    args = p.parse_args(argv)
    if args.table_only:
        measured = json.loads((args.out / "measure.json").read_text())
        table = markdown(json.loads((args.out / "listing.json").read_text()), measured["summary"])
        (args.out / "table.md").write_text(table + "\n")
        print(table)
        return
    cfg = StudyConfig(families=tuple(args.families.split(",")), seeds=tuple(args.seeds),
                      eval_in_family=args.eval_in_family)
    args.out.mkdir(parents=True, exist_ok=True)
    listing_path = args.out / "listing.json"
    if args.skip_list and listing_path.exists():
        listing = json.loads(listing_path.read_text())
    else:
        candidates = [t["task_name"] for t in sw_tasks()
                      if not excluded_topics().get(topic_of(t["task_id"], t["task_name"], sw_tasks()))]
        listing = list_tasks(gold_for=candidates)
        listing_path.write_text(json.dumps(listing, indent=1))
    built = None
    if not args.pool.exists():
        built = build(cfg, args.pool)
        print(json.dumps(built))
    rows = measure(cfg, args.pool)
    summary = summarize(rows)
    (args.out / "measure.json").write_text(json.dumps(
        {"config": asdict(cfg), "pool": str(args.pool), "built": built, "rows": rows, "summary": summary}, indent=1))
    table = markdown(listing, summary, cfg.thresholds)
    (args.out / "table.md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
