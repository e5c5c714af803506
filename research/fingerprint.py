"""The old ids' rewards before and after a change: fixed rules on fixed regions and seeds, every reward printed.

Run it from two checkouts (``PYTHONPATH=CHECKOUT python -m research.fingerprint --out F``) and compare the files:
equal rewards, bit for bit, say the change moved no reward of these ids (issue 40: "the old ids' rewards
unchanged (the fingerprint)").
"""
from __future__ import annotations

import argparse
import json

import gymnasium as gym

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.consolidators.base import run_episode
from dreamer_gym.consolidators.op_rule import make_rule

CASES: tuple[tuple[str, dict, str], ...] = (
    ("MemoryConsolidation-ScienceWorld-v1", {"family": "find-living-thing", "bank": 0}, "merge-all"),
    ("MemoryConsolidation-ScienceWorld-v1", {"family": "grow-plant", "bank": 1}, "dedupe"),
    ("MemoryConsolidation-ScienceWorld-v1", {"family": "use-thermometer", "bank": 2}, "consensus"),
    ("MemoryConsolidation-ScienceWorld-v0", {"family": "chemistry-mix", "bank": 0}, "procedures-only"),
    ("MemoryConsolidation-ScienceWorldWindows-v0", {"region": "window:4-7", "bank": 3}, "merge-all"),
    ("MemoryConsolidation-ScienceWorldWindows-v0", {"region": "window:0-3", "bank": 0}, "abstract-procedures"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = []
    for env_id, options, rule in CASES:
        env = gym.make(env_id)
        try:
            info = run_episode(env, make_rule(rule), seed=7, options=options)
            out.append({"env_id": env_id, "options": options, "rule": rule, "return": info["return"],
                        "bank_after": info["bank_after"], "score_after": info["score_after"]})
        finally:
            env.close()
        print(json.dumps(out[-1]), flush=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
