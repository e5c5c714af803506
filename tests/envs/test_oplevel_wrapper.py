"""The op-level wrapper on the real env: Gymnasium's checker, the mask, ops played through the env's own
tools, bad actions as counted no-ops rather than crashes, and the fixed `consensus` consolidator."""
from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dreamer_gym  # noqa: F401
from dreamer_gym.consolidators import make_consolidator, run_episode
from dreamer_gym.envs.ops import ABSTRACT, DROP, KEEP, MERGE, OPS
from dreamer_gym.envs.wrappers import ENTRY_FEATURES
from dreamer_gym.methods.oplevel.wrapper import OpLevelWrapper

from helpers import make_env

pytestmark = pytest.mark.jvm
ENV_ID = "MemoryConsolidation-ScienceWorld-v1"


@pytest.fixture(scope="module")
def text_env():
    """The text env under the wrapper; the consensus test plays it directly (one simulator for the module)."""
    env = make_env(ENV_ID, eval_in_family=1, eval_other=0)
    yield env
    env.close()


@pytest.fixture(scope="module")
def env(text_env):
    return OpLevelWrapper(text_env)


def test_op_level_wrapper_passes_checker_and_masks_what_cannot_be_played(env: OpLevelWrapper) -> None:
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=3)
    n, mask = info["n_entries"], info["action_mask"]
    assert obs.shape == (50, len(ENTRY_FEATURES)) and mask.shape == (50, len(OPS)) and env.action_masks().shape == (50 * len(OPS),)
    assert mask[n:, DROP].all() and not mask[n:, 1:].any()  # padding: drop only
    procedures = [i for i, e in enumerate(info["region"]) if e["kind"] == "procedure"]
    assert procedures and all(mask[i, ABSTRACT] for i in procedures)
    assert not any(mask[i, ABSTRACT] for i in range(n) if i not in procedures)


def test_merge_emits_one_consensus_entry_with_the_merged_provenance(env: OpLevelWrapper) -> None:
    _, info = env.reset(seed=3)
    region = info["region"]
    action = np.array([MERGE if e["kind"] == "procedure" else DROP for e in region] + [DROP] * (50 - len(region)))
    _, reward, terminated, _, info = env.step(action)
    assert terminated and info["invalid_ops"] == 0 and info["last_error"] is None
    (entry,) = info["emitted"]
    assert entry["kind"] == "procedure" and entry["tags"] == ["consolidated"]
    linked = {p["trajectory_id"] for e in region if e["kind"] == "procedure" for p in e["provenance"]}
    assert {p["trajectory_id"] for p in entry["provenance"]} == linked
    assert info["ops_played"] == {"merge": len(linked), "drop": len(region) - len(linked)}
    assert reward == pytest.approx(sum(info["reward_components"].values()))


def test_masked_and_malformed_ops_are_played_as_keep_and_counted(env: OpLevelWrapper) -> None:
    _, info = env.reset(seed=3)
    n = info["n_entries"]
    procedures = sum(1 for e in info["region"] if e["kind"] == "procedure")
    _, _, terminated, _, info = env.step(np.full(50, ABSTRACT))  # abstract on non-procedures and on padding
    assert terminated and info["invalid_ops"] == (n - procedures) + (50 - n)
    assert info["ops_played"] == {"abstract": procedures, "keep": n - procedures}
    env.reset(seed=3)
    _, reward, terminated, _, info = env.step(["x", 7, 1.5])  # nonsense: every real entry kept, no crash
    assert terminated and info["ops_played"] == {"keep": n} and info["invalid_ops"] == n
    assert reward == pytest.approx(0.0)


def test_consensus_consolidator_beats_keep_all_on_a_grow_plant_region(text_env) -> None:
    consensus = run_episode(text_env, make_consolidator("consensus"), seed=0)
    keep_all = run_episode(text_env, make_consolidator("keep-all"), seed=0)
    assert consensus["family"] == "grow-plant" and keep_all["score_delta_parts"]["in_family"] == 0.0
    assert consensus["score_after"] > keep_all["score_after"] + 10  # detours out: the agent reaches the stages
    assert consensus["size_after"]["tokens"] < keep_all["size_after"]["tokens"] / 4
    assert KEEP == 1  # the documented op order: drop, keep, merge, abstract
