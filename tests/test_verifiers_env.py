"""verifiers (0.4) drives the consolidation env: its own eval loop, real ScienceWorld, the Gymnasium env's reward.

The model is the only thing replaced: a scripted OpenAI-compatible server (docs/examples/verifiers_episode.py)
in the CI test, the bundled 135M model served by vLLM in the heavy one. Everything between them and the env is
verifiers' own (``vf-eval``'s runner, its interception proxy, its chat program, the trace store) and the gym env
itself, so the reward each rollout records must equal the Gymnasium env's on the same seed and calls.
docs/verifiers.md describes the adapter.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verifiers.v1", reason="verifiers is installed by `make setup` (docs/verifiers.md)")

from dreamer_gym.examples.verifiers_episode import (  # noqa: E402 - after the skip: the example imports verifiers lazily
    ENV_ID,
    SMALL,
    ScriptedModel,
    gym_reward,
    scripted_calls,
    verifiers_rewards,
)

VF_EVAL = Path(sys.executable).with_name("vf-eval")


def _episodes(run_root: Path) -> list[dict[str, Any]]:
    """The episodes ``vf-eval`` wrote (its ``traces.jsonl``, one episode a line)."""
    [traces] = list(run_root.rglob("traces.jsonl"))
    return [json.loads(line) for line in traces.read_text().splitlines() if line.strip()]


@pytest.mark.jvm
def test_vf_eval_plays_a_scripted_episode_with_the_gym_envs_reward(tmp_path: Path) -> None:
    """`vf-eval dreamer-gym-verifiers` as a user types it: verifiers finds the taskset by its id, plays one whole
    episode (a search, a malformed call, a keep, a commit) through its chat program against real ScienceWorld,
    and records the env's reward, which equals gym's on the same seed and calls."""
    seed, family = 1, "use-thermometer"
    calls = scripted_calls(seed, family, **SMALL)
    with ScriptedModel(calls) as model:
        proc = subprocess.run(
            [str(VF_EVAL), "dreamer-gym-verifiers", "-m", "scripted", "--client.base-url", model.base_url,
             "--env.taskset.env-id", ENV_ID, "--env.taskset.seeds", str(seed), "--env.taskset.families", family,
             "--env.taskset.env-kwargs", json.dumps(SMALL["env_kwargs"]), "--env.taskset.experiment", "True",
             "--no-push", "-o", str(tmp_path)],
            capture_output=True, text=True, timeout=900)  # ~30 s alone; a loaded 2-core machine may take 10x
        answered, seen = model.requests, [m["content"] for m in model.last_messages if m["role"] == "user"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    [episode] = _episodes(tmp_path)
    [trace] = episode["traces"]
    assert trace["errors"] == [] and episode["errors"] == [], (trace["errors"], episode["errors"])
    assert trace["info"]["calls"] == calls, "the env must take the model's replies as its tool calls, unchanged"
    assert answered == len(calls), "one model turn per tool call"
    # the model saw the region once, then each call's result: the malformed one as an error, the keep's count
    assert seen[0].startswith("Region ") and all(turn.startswith("Last result: ") for turn in seen[1:]), seen
    assert "ERROR" in seen[2] and "3 in the new region" in seen[3], seen
    assert trace["metrics"]["invalid_calls"] == 1 and trace["metrics"]["committed"] == 1
    reward = trace["rewards"]["consolidation_reward"]["score"]
    assert reward == gym_reward(seed, family, calls, **SMALL)
    assert trace["info"]["commit"]["comparable"] is False  # an experiment on the id says so


def test_the_id_resolves_to_the_package_verifiers_loads() -> None:
    """verifiers' own loader (what vf-eval, prime-rl and the hub call) builds our env from the id alone, with the
    chat-program harness and a subprocess seat, and one task per (seed, family); no simulator starts."""
    import verifiers.v1 as vf
    from verifiers.v1.configs.cli.eval import EvalConfig

    from dreamer_gym_verifiers import ConsolidationEnv, ConsolidationHarness, load_environment

    config = EvalConfig.model_validate({"env": {"taskset": {"id": "dreamer-gym-verifiers", "seeds": [3, 4],
                                                            "families": ["grow-plant", None]}}})
    env = vf.load_environment(config.env)
    assert isinstance(env, ConsolidationEnv)
    assert isinstance(env._harnesses["player"], ConsolidationHarness)  # noqa: SLF001 - which program runs
    tasks = [(t.data.seed, t.data.family, t.data.env_id) for t in env.taskset]
    assert tasks == [(3, "grow-plant", ENV_ID), (3, None, ENV_ID), (4, "grow-plant", ENV_ID), (4, None, ENV_ID)]
    same = load_environment(seeds=[3, 4], families=["grow-plant", None])
    assert [t.data for t in same.taskset] == [t.data for t in env.taskset]
    assert same.config.player.runtime.type == "subprocess"


@pytest.mark.heavy
@pytest.mark.vllm
@pytest.mark.jvm
def test_the_bundled_model_through_verifiers_earns_the_gym_envs_reward() -> None:
    """The bundled 135M model (vLLM's OpenAI-compatible server) plays 2 seeds x 2 rollouts at max_tool_calls 6,
    2 rollouts at once on one shared reward service; its guided replies are the env's tool calls. Each rollout's
    reward equals gym's replaying the calls that rollout made on the same seed."""
    from dreamer_gym.envs.schema import tool_call_schema
    from dreamer_gym.llm.vllm_server import VLLMServer

    settings = {"env_kwargs": {"max_tool_calls": 6}, "experiment": False}
    sampling = {"temperature": 1.0, "max_tokens": 160, "response_format": {
        "type": "json_schema", "json_schema": {"name": "action", "schema": tool_call_schema(), "strict": False}}}
    seeds, families = [0, 1], ["grow-plant"]
    # the region (up to ~3,000 tokens) is the first turn, each later turn a result: 8192 holds six of them
    with VLLMServer("smollm2-135m", served_model_name="smollm2", max_model_len=8192) as server:
        rows = verifiers_rewards(server.base_url, "smollm2", seeds, families, num_rollouts=2, max_concurrent=2,
                                 sampling=sampling, **settings)
    assert len(rows) == 4 and all(row["error"] is None for row in rows), rows
    for row in rows:
        assert 1 <= len(row["calls"]) <= 6 and row["stop"] is not None, row
        replayed = gym_reward(row["seed"], row["family"], row["calls"], **settings)
        tools = [_tool_name(c) for c in row["calls"]]
        print(f"seed {row['seed']} {row['family']}: verifiers {row['reward']:+.4f}  gymnasium {replayed:+.4f}  "
              f"({len(row['calls'])} calls: {' '.join(tools)}; stop: {row['stop']})")
        assert row["reward"] == replayed


def _tool_name(call: str) -> str:
    """What a call asked for, for the heavy test's printout: its tool, or "invalid" when the env could not parse it."""
    try:
        parsed = json.loads(call)
    except ValueError:
        return "invalid"
    return str(parsed.get("tool") or parsed.get("name") or "invalid") if isinstance(parsed, dict) else "invalid"
