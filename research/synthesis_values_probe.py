"""A probe (issue 40, item 3): does ``synthesize`` hurt because its slots are bare?

On the staged protocol-4 scienceworld track, ``rule:synthesize-procedures`` scores -0.089 against
``procedures-only``'s +0.041: the aligned steps keep bare slots ("focus on <object 3>"), which give the agent
nothing to act on, where the oracle names example values. This probe plays the same rule with one change, each
slot's observed values (read from the aligned runs' own steps) appended to the candidate ("<object 3>: crocodile,
parrot."), on one family of the draft track, and prints both rows' rewards on the same regions and episodes.
A prototype in the lab, not a rule of the package: it reads the env's pool for the runs' steps.

Result (2026-12-08, lifespan-longest-lived-then-shortest-lived, 40 regions, paired with the staged rows on the same
regions and episodes; research/results/issue40/synthesis-values-probe.json): the values move the synthesized row by
+0.008 [-0.005, +0.023] (-0.135 against -0.143), still -0.203 [-0.246, -0.165] below procedures-only. The slots are
not what hurts: the aligned candidate keeps too little ("focus on <object 1>, focus on baby baby mouse": the runs
reach the outside by different doors, so no navigation step has a majority, and one run's target becomes the
"consensus" for every variation).

    nice -n 5 python -m research.synthesis_values_probe --family lifespan-longest-lived-then-shortest-lived
"""
from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from dreamer_gym.consolidators.context_rules import ContextRuleConsolidator
from dreamer_gym.envs.synthesis import writer_procedure
from dreamer_gym.leaderboard.tracks import Track, load_track

DRAFT = Path(__file__).resolve().parent / "tracks" / "scienceworld-v4.yaml"
SLOT = re.compile(r"<[^<>]*>")


def slot_values(text: str, steps_of_runs: Iterable[Sequence[str]]) -> dict[str, list[str]]:
    """Per slot of ``text``'s steps, the values the runs' own steps put there, in order of first appearance. Each
    run is read in order: a step of the candidate takes the run's next step of its shape (so the second "focus on
    <object 3>" reads the run's second focus, not its first)."""
    steps = [(step, "^" + "(.+?)".join(re.escape(part) for part in SLOT.split(step)) + "$")
             for step in text.split(": ", 1)[-1].rstrip(".").split(", ")]
    values: dict[str, list[str]] = {}
    for run in (list(s) for s in steps_of_runs):
        at = 0
        for step, pattern in steps:
            for j in range(at, len(run)):
                found = re.match(pattern, run[j])
                if found:
                    at = j + 1
                    for slot, value in zip(SLOT.findall(step), found.groups(), strict=True):
                        values.setdefault(slot, [])
                        if value not in values[slot]:
                            values[slot].append(value)
                    break
    return values


def with_values(text: str, values: dict[str, list[str]], max_chars: int) -> str:
    listed = " ".join(f"{slot}: {', '.join(v)}." for slot, v in values.items() if v)
    return f"{text} {listed}"[:max_chars] if listed else text


class SynthesizeWithValues(ContextRuleConsolidator):
    """``rule:synthesize-procedures`` whose emitted candidates list each slot's observed values."""

    def __init__(self) -> None:
        super().__init__("synthesize-procedures")
        self.name = "synthesize-procedures+values"

    def actions(self, env: Any, obs: dict[str, Any], info: dict[str, Any]) -> Any:
        inner = super().actions(env, obs, info)
        trajectories = env.unwrapped.pool.trajectories
        reply = None
        while True:
            try:
                action = inner.send(reply) if reply is not None else next(inner)
            except StopIteration:
                return
            data = json.loads(action)
            if data.get("tool") == "emit" and SLOT.search(data.get("text", "")):
                ids = [p["trajectory_id"] if isinstance(p, dict) else p for p in data.get("provenance", [])]
                runs = [writer_procedure(trajectories[i]) for i in ids if i in trajectories]
                values = slot_values(data["text"], [r.steps for r in runs if r is not None])
                data["text"] = with_values(data["text"], values, 320 * 4)
                action = json.dumps(data)
            reply = yield action


def main(argv: Sequence[str] | None = None) -> int:
    from dreamer_gym.leaderboard.rescore_cache import cached_free, default_root
    from dreamer_gym.leaderboard.runner import run_track
    
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--family", required=True)
    p.add_argument("--staged", type=Path, default=Path("research/results/issue40/protocol4/results/scienceworld"))
    p.add_argument("--out", type=Path, default=Path("research/results/issue40/synthesis-values-probe.json"))
    args = p.parse_args(argv)
    full = load_track(DRAFT, draft=True)
    assert isinstance(full, Track)
    # the family's regions with the seeds the full track gives them (seed + the region's index there), so the
    # other-family episodes are the staged rows' own and the rewards pair region by region
    offset = full.regions().index((full.banks[0], args.family))
    track = Track(draft=True, **{**full.data(), "families": [args.family], "seed": full.seed + offset})
    result = run_track(track, SynthesizeWithValues(), name="synthesize-procedures+values", progress=True,
                       **cached_free(track, default_root(), {"workers": 1})).to_dict()
    mine = {(r["bank_index"], r["family"]): r["reward"] for r in result["records"]}
    rows = {"synthesize-procedures+values": mine}
    for name in ("rule-synthesize-procedures", "rule-procedures-only", "empty"):
        staged = json.loads((args.staged / f"{name}.json").read_text())
        rows[name] = {(r["bank_index"], r["family"]): r["reward"] for r in staged["records"] if r["family"] == args.family}
    import numpy as np

    rng = np.random.default_rng(0)
    keys = sorted(mine)
    out = {"family": args.family, "regions": len(keys), "track": str(DRAFT), "rows": {}, "examples":
           [e["text"] for c in result["commits"][:3] for e in c["emitted"]]}
    for name, rewards in rows.items():
        d = np.array([mine[k] - rewards[k] for k in keys])
        boot = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)]
        out["rows"][name] = {"mean": float(np.mean([rewards[k] for k in keys])), "values_minus_this": float(d.mean()),
                             "ci95": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))]}
        print(name, json.dumps(out["rows"][name]), flush=True)
    args.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
