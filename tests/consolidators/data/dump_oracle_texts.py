"""Regenerate ``oracle_texts.json`` after a *deliberate* change to the oracle or its decoys (every reference
score moves with them): ``python tests/consolidators/data/dump_oracle_texts.py``."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_oracle import POOLS, _env  # noqa: E402

from dreamer_gym.consolidators import OracleConsolidator, ProseOracleDecoy, WrongProcedureDecoy  # noqa: E402
from dreamer_gym.suites import get_suite_spec  # noqa: E402


def main() -> None:
    out: dict[str, dict[str, dict[str, list[list[str]]]]] = {}
    for suite in sorted(POOLS):
        env = _env(suite)
        families = sorted({*env.unwrapped.pool.families, *get_suite_spec(suite).procedures})
        out[suite] = {p.name: {f: [list(t) for t in p.texts(env, f)] for f in families}
                      for p in (OracleConsolidator(), ProseOracleDecoy(), WrongProcedureDecoy())}
    (Path(__file__).parent / "oracle_texts.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
