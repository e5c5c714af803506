#!/bin/bash
# issue 40 item 1: protocol 4's rows, staged (research/protocol4.py; resumable: rerun to go on)
cd "$(dirname "$0")/.."
ROWS="empty oracle rule:synthesize-procedures rule:synthesize-procedures-facts rule:synthesize-or-keep rule:context-synthesize rule:context keep-all rule:merge-all rule:drop-insights rule:procedures-only dedupe consensus rule:merge-procedures rule:merge-procedures-keep-facts rule:abstract-procedures"
date
nice -n 12 .venv/bin/python -m research.protocol4 run research/tracks/scienceworld-v4.yaml \
  --out research/results/issue40/protocol4 --rows $ROWS
date
