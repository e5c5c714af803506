"""The non-privileged red team (dreamer_gym/consolidators/red_team.py) plays by the env's rules: every call
valid, within every budget, on the training id and on the held-out track's pool. Their rewards are the
validity study's (docs/validity.md, "Red team"); here only what they emit, without a commit (no simulator)."""
from __future__ import annotations

import json
from dataclasses import fields

import gymnasium as gym
import pytest

from dreamer_gym.consolidators import make_consolidator
from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.leaderboard import REFERENCES, load_track

RED_TEAM = ("constant-train", "stuffing", "junk", "giant", "duplicate", "injection", "copy-trajectory")


def _until_commit(env: gym.Env, name: str, options: dict) -> tuple[list[dict], dict]:
    """Play ``name`` up to (not including) its commit: ``(calls made, last info)``."""
    obs, info = env.reset(seed=3, options=options)
    policy = make_consolidator(name)
    calls = policy.actions(env, obs, info)
    made = []
    action = next(calls)
    while json.loads(action)["tool"] != "commit":
        made.append(json.loads(action))
        obs, _, terminated, _, info = env.step(action)
        assert not terminated and info["invalid_calls"] == 0, (name, info["last_error"])
        action = calls.send((obs, info))
    return made, info


# the held-out track is heavy (~110 s, issue 39: CI time); the training id keeps every policy in CI
@pytest.fixture(scope="module", params=["training id", pytest.param("held-out track", marks=pytest.mark.heavy)])
def env(request):
    if request.param == "training id":
        env = gym.make("MemoryConsolidation-ScienceWorld-v0", service="inprocess")
        options = {"bank": 1, "family": "power-component"}
    else:
        track = load_track("scienceworld")
        env = ConsolidationEnv(**track.env_kwargs(), service="inprocess")
        options = {"bank": 1, "family": "lifespan-longest-lived"}
    yield env, options
    env.close()


@pytest.mark.parametrize("name", RED_TEAM)
def test_each_red_team_policy_emits_valid_calls(env, name):
    env, options = env
    made, info = _until_commit(env, name, options)
    assert made, name  # it did something
    assert len(info["emitted"]) >= 1 and info["invalid_calls"] == 0


def test_constant_train_writes_training_families_whatever_the_region(env):
    env, options = env
    _, info = _until_commit(env, "constant-train", options)
    texts = " ".join(e["text"] for e in info["emitted"])
    assert "light bulb" in texts or "<object>" in texts  # power-component's procedure, a training family
    assert "life span" not in texts  # nothing of a held-out family
    assert "constant-train" in REFERENCES  # it reads the training pool's gold paths: a reference


@pytest.mark.jvm
def test_no_red_team_policy_earns_the_oracles_reward(env):
    """On real ScienceWorld, one region of the training id and two of the held-out track (their settings on 2+1
    evaluation episodes a commit, not 3+2: the claim is the ordering, not the scores): every non-privileged
    red-team policy earns less than the oracle, summed. (The training id's second region, find-plant, was dropped
    for CI time, issue 40: each policy was below the oracle on each of the two, copy-trajectory closest, 0.23 and
    0.35 against 0.43 and 0.52.) (The full bar, a paired CI over 42 and 24 regions against
    the oracle and the best honest fixed baseline, is the study in docs/validity.md.)"""
    from dreamer_gym.consolidators import run_episode

    env, options = env
    config = env.unwrapped.config
    small = ConsolidationEnv(**{**{f.name: getattr(config, f.name) for f in fields(config)},
                                "eval_in_family": 2, "eval_other": 1})
    training = options["family"] == "power-component"
    families = [options["family"]] if training else [options["family"], "lifespan-shortest-lived"]

    def total(name: str) -> float:
        return sum(run_episode(small, make_consolidator(name), seed=0, options={"bank": 0, "family": f})["return"]
                   for f in families)

    try:
        oracle = total("oracle")
        assert oracle > 0.2
        for name in RED_TEAM:
            if name == "constant-train" and training:
                continue  # on the training id it writes the oracle's own texts: a tie up to the size term, by design
            assert total(name) < oracle, name
    finally:
        small.close()


def test_constant_transfer_writes_scienceworld_texts_on_another_suite():
    """On the transfer tracks (ALFWorldGen, MiniWoB) the eligible policies are trained on ScienceWorld only,
    so what they could memorise is ScienceWorld's training texts; ``constant-train`` there would memorise the
    track's own id (docs/validity.md: why those tracks rank ScienceWorld-trained submissions only)."""
    env = gym.make("MemoryConsolidation-ALFWorldGen-v0", service="inprocess")
    try:
        _, info = _until_commit(env, "constant-transfer", {"bank": 0, "family": "pick_and_place_simple"})
        transfer = " ".join(e["text"] for e in info["emitted"])
        _, info = _until_commit(env, "constant-train", {"bank": 0, "family": "pick_and_place_simple"})
        own = " ".join(e["text"] for e in info["emitted"])
    finally:
        env.close()
    assert "focus on" in transfer and "<receptacle>" not in transfer  # ScienceWorld's procedures
    assert "<receptacle>" in own and "focus on" not in own  # ALFWorld's own task types
    assert "constant-transfer" in REFERENCES
