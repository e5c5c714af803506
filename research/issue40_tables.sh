#!/bin/bash
# issue 40 item 6: the rule-reward tables of the training regions (resumable: rerun this script to go on;
# research/results/issue40/learnability-windows-train.records.jsonl.gz is a snapshot of the first log)
cd "$(dirname "$0")/.."
RULES="keep-all empty dedupe consensus merge-all merge-procedures merge-procedures-keep-facts abstract-procedures procedures-only drop-insights rule:context rule:synthesize-procedures rule:synthesize-procedures-facts rule:synthesize-or-keep rule:context-synthesize"
date
nice -n 10 .venv/bin/dreamer-gym learnability --env MemoryConsolidation-ScienceWorldWindows-v1 --rules $RULES \
  --draws 1 --fold-by variation --out runs/issue40/learnability-windows-train --quiet
date
nice -n 10 .venv/bin/dreamer-gym learnability --env MemoryConsolidation-ScienceWorld-v2 --rules $RULES \
  --draws 1 --fold-by variation --env-kwargs '{"pool": "scienceworld-train-v1", "pool_hash": "p6ca70ed2d0f6e0b0", "eval_in_family": 10}' \
  --out runs/issue40/learnability-family-train --quiet
date
