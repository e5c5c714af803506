"""The oracle is suite-generic (it reads each suite's SuiteSpec) and writes, byte for byte, the pinned texts
of ``data/oracle_texts.json``: every reference score moves with them, so a change must be deliberate
(regenerate with ``data/dump_oracle_texts.py`` and say why in the CHANGELOG). First dumped from the
suite-specific oracle before it became generic; issue 11 merged each family's facts into its procedure
entry and added the new ScienceWorld families."""
from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from dreamer_gym.consolidators import OracleConsolidator, ProseOracleDecoy, WrongProcedureDecoy
from dreamer_gym.consolidators.oracle import ReferenceEvidence
from dreamer_gym.errors import ConfigError
from dreamer_gym.pool import load_pool
from dreamer_gym.suites import get_suite_spec

EXPECTED = json.loads((Path(__file__).parent / "data" / "oracle_texts.json").read_text())
POOLS = {"scienceworld": "scienceworld-v0", "alfworld-gen": "alfworld-gen-v0", "miniwob": "miniwob-v0"}


def _env(suite: str) -> types.SimpleNamespace:
    """What the oracle reads of an env: its public pool (banks, families, TRAIN trajectories) and its
    config (no simulator needed); the gold paths it loads from the pool file named there."""
    pool = load_pool(POOLS[suite])
    public = types.SimpleNamespace(hash=pool.hash, families=pool.families, trajectories=pool.trajectories)
    return types.SimpleNamespace(unwrapped=types.SimpleNamespace(
        pool=public, config=types.SimpleNamespace(suite=suite, pool=POOLS[suite], pool_hash=pool.hash)))


@pytest.mark.parametrize("suite", sorted(POOLS))
def test_oracle_and_decoys_write_what_they_wrote_before_they_became_generic(suite: str) -> None:
    env = _env(suite)
    expected = EXPECTED[suite]
    families = sorted({*env.unwrapped.pool.families, *get_suite_spec(suite).procedures})
    evidence = ReferenceEvidence.load(POOLS[suite])
    for policy in (OracleConsolidator(), ProseOracleDecoy(evidence), WrongProcedureDecoy()):
        assert sorted(expected[policy.name]) == families
        for family in families:
            got = [list(t) for t in policy.texts(env, family)]
            assert got == expected[policy.name][family], (policy.name, family)


def test_oracle_refuses_a_suite_without_gold_paths() -> None:
    env = types.SimpleNamespace(unwrapped=types.SimpleNamespace(config=types.SimpleNamespace(suite="webarena")))
    with pytest.raises(ConfigError, match="has no gold paths"):
        OracleConsolidator().texts(env, "shopping")
