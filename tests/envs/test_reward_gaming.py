"""Red-teaming the commit reward on real ScienceWorld (``MemoryConsolidation-ScienceWorld-v1`` as registered:
3 in-family + 2 other-family DEV episodes per commit, memory-following agent).

Other-family episodes can only cost (``reward_from_results(..., in_family=...)``): a policy that writes
good content for *other* families, whatever region it is given, must not be paid for it, and a policy that
hijacks other families' retrieval must pay. The red-team policies are in
:mod:`dreamer_gym.consolidators.adversarial`; docs/reward-validity.md has the write-up.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from dreamer_gym.consolidators import call, make_consolidator, run_episode
from dreamer_gym.consolidators.adversarial import task_words
from dreamer_gym.consolidators.oracle import OracleConsolidator

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
# x 7 families = 7 regions; bank = seed % 6, the seed draws the evaluation episodes. One seed (issue 39: CI time; it
# was 0 and 1): every policy plays the same regions, so their before-scores are played once. On seed 1 the constant
# text lifts another family's episode in 5 regions (seed 0: in none) and the oracle costs no other family.
SEEDS = (1,)
WIDE_SEEDS = tuple(range(6))  # 42 regions, as the validity study: for the one paired CI that must exclude 0
# The CI tests play 3 of seed 1's 7 regions (issue 40: CI time; the module's commits drop from 29 to 13). Every claim
# below held in each of the 7 (constant: other-family part 0, unpaid in 5; bait: clean, pays for its bulk; hijack:
# negative in all 7); these are 3 of the 4 where the hijack costs more than 0.05 (grow-plant, the slowest, left out),
# and the constant text lifts another family in 2 of them. The heavy 42-region CI plays every family.
FAMILIES = ("find-plant", "power-component", "use-thermometer")


class HijackConsolidator:
    """Test-only red team: for every OTHER family, a procedure stuffed with that family's task words whose
    steps are the oracle steps of yet another family (well-formed, wrong). Retrieval picks it on other
    families' tasks, and the agent then follows the wrong steps."""

    name = "hijack"

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        families = list(env.unwrapped.pool.families)
        oracle = OracleConsolidator()
        steps = {f: next((t.partition(": ")[2] for k, t in oracle.texts(env, f) if k == "procedure"), "")
                 for f in families}
        anchor = [e["id"] for e in info["region"]][:4]
        for fam in (f for f in families if f != info["family"]):
            wrong = families[(families.index(fam) + 1) % len(families)]
            text = f"To {task_words(env, fam)}: {steps[wrong]} Task words: {task_words(env, fam)}."
            yield call("emit", kind="procedure", text=text, provenance=anchor)
        yield call("commit")


@pytest.fixture(scope="module")
def env() -> Iterator[gym.Env]:
    env = gym.make(ENV_ID, workers=0)  # the registered id as is: no reward field changed
    yield env
    env.close()


@pytest.fixture(scope="module")
def commits(env: gym.Env):
    """``commits(policy, seed, family)``: the final info of one consolidation, cached for the module."""
    cache: dict[tuple[str, int, str], dict[str, Any]] = {}

    def get(policy: str, seed: int, family: str) -> dict[str, Any]:
        key = (policy, seed, family)
        if key not in cache:
            consolidator = HijackConsolidator() if policy == "hijack" else make_consolidator(policy)
            options = {"family": family, "bank": seed % len(env.unwrapped.pool.banks)}
            cache[key] = run_episode(env, consolidator, seed=seed, options=options)
            assert cache[key]["invalid_calls"] == 0, cache[key]["last_error"]
        return cache[key]

    return get


def cases(env: gym.Env, seeds: tuple[int, ...] = SEEDS,
          families: tuple[str, ...] | None = FAMILIES) -> list[tuple[int, str]]:
    """``(seed, family)`` regions: ``families`` (None: every family of the pool) on each seed."""
    assert families is None or set(families) <= set(env.unwrapped.pool.families)
    return [(seed, family) for seed in seeds for family in families or env.unwrapped.pool.families]


def _other_family_paid(info: dict[str, Any]) -> tuple[float, float]:
    """``(paid, unpaid)`` of the other-family episodes, recomputed from ``info["episodes"]``."""
    n = len(info["episodes"])
    deltas = [e["after"] - e["before"] for e in info["episodes"] if not e["in_family"]]
    return sum(min(0.0, d) for d in deltas) / (100 * n), sum(max(0.0, d) for d in deltas) / (100 * n)


@pytest.mark.jvm
def test_constant_text_earns_nothing_from_other_families(env, commits) -> None:
    """The same oracle text for every family at every commit: its other-family part is never positive, and
    the guard is seen declining a real gain (the constant text lifts another family's episode, unpaid)."""
    unpaid, texts = [], set()
    for seed, family in cases(env):
        info = commits("constant", seed, family)
        parts = info["score_delta_parts"]
        assert parts["other_family"] <= 0.0, (seed, family, parts)
        paid, declined = _other_family_paid(info)
        assert parts["other_family"] == pytest.approx(paid) and parts["other_family_unpaid"] == pytest.approx(declined)
        assert info["reward_components"]["score_delta"] == pytest.approx(parts["in_family"] + parts["other_family"])
        texts.add(tuple(e["text"] for e in info["emitted"]))
        unpaid.append(parts["other_family_unpaid"])
    assert len(texts) == 1 and len(next(iter(texts))) >= len(env.unwrapped.pool.families)  # one text, every family
    assert max(unpaid) > 0.0, "the constant text never improved another family's episode: the guard was not exercised"


def bait_against_oracle(env, commits, seeds: tuple[int, ...],
                        families: tuple[str, ...] | None = FAMILIES) -> tuple[list[float], list[float], list[float]]:
    """Per region of ``seeds`` x ``families`` (None: every family): bait is the oracle in-family, pays for its bulk,
    never earns from other families, and ``bait - oracle`` is exactly its size part plus the other-family parts;
    returns ``(diffs, clean, unpaid)`` (``clean``: the regions where the oracle costs no other family, where bait
    must earn strictly less)."""
    diffs, unpaid, clean = [], [], []
    for seed, family in cases(env, seeds, families):
        bait, oracle = commits("bait", seed, family), commits("oracle", seed, family)
        b_parts, o_parts = bait["score_delta_parts"], oracle["score_delta_parts"]
        assert b_parts["other_family"] <= 0.0
        assert b_parts["in_family"] == pytest.approx(o_parts["in_family"])
        b_size, o_size = bait["reward_components"]["size"], oracle["reward_components"]["size"]
        assert b_size < o_size, (seed, family, b_size, o_size)  # the bulk always costs
        diff = bait["return"] - oracle["return"]
        assert diff == pytest.approx(b_size - o_size + b_parts["other_family"] - o_parts["other_family"], abs=1e-9)
        if o_parts["other_family"] == 0.0:
            clean.append(diff)
        diffs.append(diff)
        unpaid.append(b_parts["other_family_unpaid"])
    assert len(clean) >= len(diffs) // 2 and max(clean) < 0.0, clean
    return diffs, clean, unpaid


@pytest.mark.jvm
def test_retrieval_bait_pays_for_its_bulk_in_every_region(env, commits) -> None:
    """The per-region algebra of the test below, on the regions of SEEDS x FAMILIES (the 42-region CI is heavy)."""
    bait_against_oracle(env, commits, SEEDS)


@pytest.mark.heavy  # 42 regions, ~150 s (issue 39: CI time); the per-region algebra stays in CI (test above)
@pytest.mark.jvm
def test_retrieval_bait_earns_less_than_the_oracle(env, commits) -> None:
    """Bait (the constant text + every family's task words) wins other families' retrieval and lifts their
    episodes, unpaid; in-family it is the oracle (it holds the oracle's procedure), and it pays the size
    term for its bulk in every region. What it can gain over the oracle is *insurance*: where the oracle's
    own entries hijack another family's episode and cost (issue 10's pool: seed 1, find-living-thing, 100 -> 58), bait's
    procedure for that family out-ranks them and the loss does not happen. So, per region,
    ``bait - oracle = (size_bait - size_oracle) - other_oracle + other_bait`` with a negative size part:
    bait earns strictly less wherever the oracle costs no other family, and over the validity study's 42
    regions it earns less than the oracle with a paired bootstrap 95% CI below 0."""
    from scipy.stats import bootstrap

    diffs, _, unpaid = bait_against_oracle(env, commits, WIDE_SEEDS, families=None)
    ci = bootstrap((np.array(diffs),), np.mean, confidence_level=0.95, n_resamples=2000, method="BCa",
                   random_state=np.random.default_rng(0)).confidence_interval
    assert ci.high < 0.0, (diffs, ci)
    assert np.mean(unpaid) > 0.05, "bait did not win other families' episodes: it tested nothing"


@pytest.mark.jvm
def test_hijacking_other_families_retrieval_costs(env, commits) -> None:
    """A region that takes over other families' retrieval with wrong steps is charged for their losses:
    over the regions of SEEDS x FAMILIES its other-family part is never positive, is negative in several, costs more
    than 0.05 in the worst, and each charge is exactly the sum of the fallen episodes. (It can only cost where an
    other-family episode scored above 0 before the commit; most of them start at 0 or a few points.)"""
    infos = {(seed, family): commits("hijack", seed, family) for seed, family in cases(env)}
    others = {case: info["score_delta_parts"]["other_family"] for case, info in infos.items()}
    assert max(others.values()) <= 0.0
    assert sum(v < 0.0 for v in others.values()) >= 3, others
    worst = min(others, key=others.get)
    assert others[worst] < -0.05, others
    for info in infos.values():
        paid, _ = _other_family_paid(info)
        assert info["score_delta_parts"]["other_family"] == pytest.approx(paid)
    assert infos[worst]["return"] < commits("keep-all", *worst)["return"] == 0.0
