#!/bin/bash
# issue 31 item 4: op-level (tie class, batch advantages, 20 episodes) x 5 seeds on banks 0-15 of the r3 window
# pool; then the fixed rules and the 5 policies on 40 windows of held-out banks 16-23, same draws.
cd /work/main
set -x
for s in 0 1 2 3 4; do
  /usr/bin/time -v .venv/bin/dreamer-gym train --algo oplevel --config /work/runs31/oplevel-r3-batch-e6.yaml --seed $s \
    --output-dir /work/runs31/oplevel-r3-seed$s --quiet > /work/runs31/train-seed$s.log 2>&1
done
KW='{"pool": "scienceworld-windows-r3-v0", "pool_hash": "p28d93d125475cebe", "eval_in_family": 20}'
.venv/bin/dreamer-gym learnability --env-kwargs "$KW" --banks 16 17 18 19 20 21 22 23 --max-regions 40 --seed 0 \
  --rules keep-all empty dedupe consensus merge-all procedures-only drop-insights merge-procedures-keep-facts \
  --out /work/runs31/rules-heldout-r3-e20 > /work/runs31/rules.log 2>&1
P=""; for s in 0 1 2 3 4; do P="$P oplevel:/work/runs31/oplevel-r3-seed$s/checkpoint-10"; done
.venv/bin/dreamer-gym learnability --env-kwargs "$KW" --banks 16 17 18 19 20 21 22 23 --max-regions 40 --seed 0 \
  --rules keep-all $P --out /work/runs31/policies-heldout-r3-e20 > /work/runs31/policies.log 2>&1
.venv/bin/python -m research.policy_vs_rules /work/runs31/rules-heldout-r3-e20/learnability.json /work/runs31/policies-heldout-r3-e20/learnability.json > /work/runs31/compare.txt 2>&1
echo done
