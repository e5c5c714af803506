"""One consolidation episode driven by verifiers' own eval loop, its reward beside the Gymnasium env's.

verifiers (0.4) plays `MemoryConsolidation-ScienceWorld-v1` through `dreamer_gym_verifiers` (docs/verifiers.md):
its eval runner (`vf-eval`'s `run_eval`) starts the rollout, its interception proxy and its chat program, and
the program asks a model for each tool call. The model here is a scripted one, a tiny OpenAI-compatible server
that answers each turn with the next call of a fixed list, so the episode is the same with and without
verifiers: the same calls replayed on `gym.make` with the same seed give the same reward.
Run: python docs/examples/verifiers_episode.py (a test runs this file)
"""
from __future__ import annotations

import asyncio
import json
import tempfile
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import gymnasium as gym

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.envs.consolidation import ConsolidationEnv

ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
# A smoke-sized experiment on the id: 1 evaluation episode per commit instead of 3 + 2 (drop it, and
# experiment=True, to play the id itself)
SMALL = {"env_kwargs": {"eval_in_family": 1, "eval_other": 0}, "experiment": True}


class ScriptedModel(ThreadingHTTPServer):
    """An OpenAI-compatible chat server whose reply to a conversation with n user turns is ``calls[n - 1]``
    (``{"tool": "commit"}`` past the end), as text or as a stream. Stateless per conversation, so concurrent
    rollouts of the same script each get the whole script. ``requests`` counts the chat calls it answered and
    ``last_messages`` is the conversation the last one saw."""

    def __init__(self, calls: Sequence[str]) -> None:
        super().__init__(("127.0.0.1", 0), _ScriptedHandler)
        self.calls = list(calls)
        self.requests = 0
        self.last_messages: list[dict[str, Any]] = []
        self.daemon_threads = True
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def reply(self, messages: list[dict[str, Any]]) -> str:
        self.requests += 1
        self.last_messages = messages
        turn = sum(1 for m in messages if m.get("role") == "user") - 1
        return self.calls[turn] if 0 <= turn < len(self.calls) else json.dumps({"tool": "commit"})

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


class _ScriptedHandler(BaseHTTPRequestHandler):
    server: ScriptedModel

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # /v1/models
        self._send("application/json", json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model"}]}))

    def do_POST(self) -> None:  # /v1/chat/completions
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = self.server.reply(body["messages"])
        base = {"id": f"chatcmpl-{time.time_ns()}", "created": int(time.time()), "model": body.get("model", "scripted")}
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if not body.get("stream"):
            self._send("application/json", json.dumps({**base, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}))
            return
        chunk = {**base, "object": "chat.completion.chunk"}
        events = [{**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
                  {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                  {**chunk, "choices": [], "usage": usage}]
        self._send("text/event-stream", "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n")

    def _send(self, content_type: str, payload: str) -> None:
        data = payload.encode()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def make_env(env_kwargs: dict[str, Any] | None = None, experiment: bool = False) -> gym.Env:
    """The Gymnasium env the adapter builds for the same settings: ``gym.make(ENV_ID, **env_kwargs)``, or with
    ``experiment`` an experiment on the id (any field may change)."""
    if experiment:
        return ConsolidationEnv.experiment(ENV_ID, **(env_kwargs or {}))
    return gym.make(ENV_ID, **(env_kwargs or {}))


def scripted_calls(seed: int, family: str, **settings: Any) -> list[str]:
    """A search, a malformed call (an observation, not a crash), keeping the region's first three entries,
    and a commit: built from the region the env shows after ``reset(seed, family)``."""
    env = make_env(**settings)
    try:
        _, info = env.reset(seed=seed, options={"family": family})
        ids = [entry["id"] for entry in info["region"]][:3]
    finally:
        env.close()
    return [json.dumps({"tool": "search", "query": "thermometer"}), '{"tool": "keep", "ids":',
            json.dumps({"tool": "keep", "ids": ids}), json.dumps({"tool": "commit"})]


def gym_reward(seed: int, family: str, calls: Sequence[str], **settings: Any) -> float:
    """The same calls on the Gymnasium env: the sum of the step rewards up to the commit."""
    env = make_env(**settings)
    try:
        env.reset(seed=seed, options={"family": family})
        total = 0.0
        for call in calls:
            _, reward, terminated, truncated, _ = env.step(call)
            total += float(reward)
            if terminated or truncated:
                break
        return total
    finally:
        env.close()


def verifiers_rewards(base_url: str, model: str, seeds: Sequence[int], families: Sequence[str], *,
                      num_rollouts: int = 1, max_concurrent: int = 1, env_kwargs: dict[str, Any] | None = None,
                      experiment: bool = False, sampling: dict[str, Any] | None = None,
                      output_dir: str | None = None) -> list[dict[str, Any]]:
    """Run verifiers' eval loop (what ``vf-eval dreamer-gym-verifiers`` runs) against ``base_url`` and return,
    per rollout, its task's seed and family, the reward, the tool calls the env took and the error if any."""
    import verifiers.v1 as vf
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    from dreamer_gym_verifiers import ConsolidationEnvConfig, ConsolidationTasksetConfig

    taskset = ConsolidationTasksetConfig(id="dreamer-gym-verifiers", env_id=ENV_ID, seeds=list(seeds),
                                         families=list(families), env_kwargs=dict(env_kwargs or {}),
                                         experiment=experiment)
    env = ConsolidationEnvConfig(taskset=taskset)
    with tempfile.TemporaryDirectory() as scratch:
        config = EvalConfig(env=env, model=model, client=vf.EvalClientConfig(base_url=base_url, api_key_var="OPENAI_API_KEY"),
                            sampling=vf.SamplingConfig(**(sampling or {})), num_rollouts=num_rollouts,
                            max_concurrent=max_concurrent, rich=None, push=False,
                            output_dir=Path(output_dir or scratch))
        episodes = asyncio.run(run_eval(config))
    rows = []
    for episode in episodes:
        trace = episode.traces[0] if episode.traces else None
        reward = trace.rewards.get("consolidation_reward") if trace else None
        errors = [*episode.errors, *(trace.errors if trace else [])]
        rows.append({"seed": episode.task.data.seed, "family": episode.task.data.family,
                     "reward": reward.score if reward else None, "calls": trace.info.get("calls", []) if trace else [],
                     "stop": trace.stop_condition if trace else None,
                     "error": "; ".join(f"{e.type}: {e.message}" for e in errors) or None})
    return rows


if __name__ == "__main__":
    seed, family = 0, "grow-plant"
    calls = scripted_calls(seed, family, **SMALL)
    with ScriptedModel(calls) as model:
        [row] = verifiers_rewards(model.base_url, "scripted", [seed], [family], **SMALL)
    print(f"verifiers: reward {row['reward']:+.4f} after {len(row['calls'])} tool calls (error: {row['error']})")
    replayed = gym_reward(seed, family, calls, **SMALL)
    print(f"gymnasium: reward {replayed:+.4f} on the same seed and calls")
    print("the same score on both:", row["reward"] == replayed)
