"""Which evidence predicts a window's best rule? Post-hoc, on a ``dreamer-gym learnability`` record of a window pool.

Rebuilds each studied window from the pool (``bank_at`` + ``select_region``: no simulator), computes evidence a
policy can read from the region (the procedure groups' merge support and tasks, procedure length, failure
insights, pitfalls, the window's first session, the number of groups) and one it cannot (``novel_tasks``: the
window's tasks the bank held no entry for before the window), and fits the learnability study's stumps and
depth-2 tree on them, cross-fitted.

    python -m research.window_evidence runs/learnability-windows/learnability.json [--pool scienceworld-windows-v0]
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from dreamer_gym.envs.group_evidence import group_evidence
from dreamer_gym.envs.observation import entry_dict
from dreamer_gym.envs.ops import entry_classes
from dreamer_gym.memory import bank_at, parse_window
from dreamer_gym.memory.tokens import count_tokens
from dreamer_gym.pool import BankPool, load_pool
from dreamer_gym.studies.learnability import FEATURES, crossfit, feature_policies, fit_tree, predict_tree, score_table

EVIDENCE: tuple[str, ...] = ("proc_support", "proc_tasks", "proc_tokens_mean", "failures", "pitfalls",
                             "window_start", "groups", "retrieved", "uncovered_tasks", "written_score", "retrieved_score", "success_share",
                             "novel_tasks")
HIDDEN: tuple[str, ...] = ("novel_tasks",)  # not in the region: the policy cannot read it


def window_evidence(pool: BankPool, key: str, bank_index: int, max_entries: int = 50) -> list[float]:
    """:data:`EVIDENCE` of one window."""
    bank = bank_at(pool.banks[bank_index], key)
    # through the pool's scheme: with `retrieved=k` the region also holds older entries the window's episodes read
    ids = pool.region_scheme.select(bank, key, pool.trajectories, max_entries).entry_ids
    region = [entry_dict(bank.get(i)) for i in ids]
    groups = group_evidence(region, entry_classes(region).tolist()) if region else []
    procedures = [g for g in groups if g.procedures]
    lengths = [count_tokens(e["text"]) for e in region if e["kind"] == "procedure"]
    start = parse_window(key)[0]  # type: ignore[index]
    known = {e.family for e in bank if e.session < start}
    written = {e["family"] for e in region if e["session"] >= start}
    retrieved = {e["family"] for e in region if e["session"] < start}  # visible: the region's older entries

    def scores(older: bool) -> list[float]:  # the cited trajectories' final scores (read_trajectory shows them)
        cited = {p["trajectory_id"] for e in region if (e["session"] < start) == older for p in e["provenance"]}
        return [pool.trajectories[t].final_score for t in cited if t in pool.trajectories]

    new, old = scores(False), scores(True)
    return [min((g.support for g in procedures), default=1.0), max((g.tasks for g in procedures), default=0),
            float(np.mean(lengths)) if lengths else 0.0, sum("failed after" in e["text"] for e in region),
            sum(e["kind"] == "pitfall" for e in region), start, len(groups),
            sum(e["session"] < start for e in region), len(written - retrieved),
            float(np.mean(new)) if new else 0.0, float(np.mean(old)) if old else 0.0,
            float(np.mean([v >= 100 for v in new])) if new else 0.0, len(written - known)]


def analyse(record: dict[str, Any], pool: BankPool) -> dict[str, Any]:
    regions = [(r["family"], r["bank"]) for r in record["regions"]]
    rules = record["config"]["rules"]
    scores = score_table(record["records"], regions, rules, 2)
    fit = crossfit(scores)
    x = np.array([window_evidence(pool, k, b) for k, b in regions], dtype=float)
    visible = [i for i, name in enumerate(EVIDENCE) if name not in HIDDEN]
    base = np.array([[r[f] for f in FEATURES] for r in record["regions"]], dtype=float)
    return {
        "constant": fit["constant_mean"], "choice": fit["choice_mean"],
        "evidence": feature_policies(scores, x, EVIDENCE, rules),
        "visible_tree": feature_policies(scores, np.hstack([base, x[:, visible]]),
                                         [*FEATURES, *(EVIDENCE[i] for i in visible)], rules)[-1],
    }


def bank_split(record: dict[str, Any], pool: BankPool) -> list[dict[str, Any]]:
    """The stricter cross-fit: fit on half of the banks with one draw, play on the other half with the other draw
    (and swap), so neither the regions nor the episodes a policy is scored on were seen when it was fitted. Per
    model: its mean reward, the constant's (chosen on the fitting half), and the agreement of each with the
    scored draw's best rule."""
    regions = [(r["family"], r["bank"]) for r in record["regions"]]
    rules = record["config"]["rules"]
    scores = score_table(record["records"], regions, rules, 2)
    visible = [i for i, name in enumerate(EVIDENCE) if name not in HIDDEN]
    base = np.array([[r[f] for f in FEATURES] for r in record["regions"]], dtype=float)
    ev = np.array([window_evidence(pool, k, b) for k, b in regions], dtype=float)
    x, names = np.hstack([base, ev[:, visible]]), [*FEATURES, *(EVIDENCE[i] for i in visible)]
    banks = sorted({b for _, b in regions})
    halves = [np.array([b in banks[: len(banks) // 2] for _, b in regions]), None]
    halves[1] = ~halves[0]
    models = [(f, [j], 1) for j, f in enumerate(names)] + [("tree (every visible feature, depth 2)",
                                                            list(range(len(names))), 2)]
    out = []
    for name, cols, depth in models:
        value = constant = agree = agree_constant = 0.0
        for fit, play in ((halves[0], halves[1]), (halves[1], halves[0])):
            for d in (0, 1):
                chosen, held = scores[fit, :, d], scores[play, :, 1 - d]
                tree = fit_tree(x[fit][:, cols], np.argmax(chosen, axis=1), depth)
                played = predict_tree(tree, x[play][:, cols])
                c = int(np.argmax(chosen.mean(axis=0)))
                rows, best = np.arange(len(held)), held.max(axis=1)
                value += held[rows, played].mean() / 4
                constant += held[:, c].mean() / 4
                agree += (held[rows, played] >= best - 1e-9).mean() / 4
                agree_constant += (held[:, c] >= best - 1e-9).mean() / 4
        out.append({"model": name, "value": float(value), "constant": float(constant), "agreement": float(agree),
                    "agreement_constant": float(agree_constant)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("record", help="learnability.json of a window pool")
    parser.add_argument("--pool", default="scienceworld-windows-v0")
    parser.add_argument("--bank-split", action="store_true", help="fit on half of the banks, play on the rest")
    args = parser.parse_args()
    if args.bank_split:
        for p in bank_split(json.load(open(args.record)), load_pool(args.pool)):
            print(f"{p['model']:>38} {p['value']:+.4f} (constant {p['constant']:+.4f}) agreement "
                  f"{p['agreement']:.2f} (constant {p['agreement_constant']:.2f})")
        return
    out = analyse(json.load(open(args.record)), load_pool(args.pool))
    print(f"best constant {out['constant']:+.4f}, cross-fitted choice {out['choice']:+.4f}")
    for p in out["evidence"]:
        print(f"{p['model']:>30} {p['value']:+.4f} agreement {p['agreement']:.2f}  {p['trees'][0]}")
    p = out["visible_tree"]
    print(f"{'tree on every visible feature':>30} {p['value']:+.4f} agreement {p['agreement']:.2f}  {p['trees'][0]}")


if __name__ == "__main__":
    main()
