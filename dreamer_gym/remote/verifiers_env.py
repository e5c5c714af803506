"""Any registered consolidation id as a verifiers (0.4, ``verifiers.v1``) environment: tool calls in, reward out.

verifiers 0.4 finds an environment by its *taskset id*: ``vf-eval dreamer-gym-verifiers`` imports the package
``dreamer_gym_verifiers`` (``-`` becomes ``_``) and takes the ``Taskset``, ``Env`` and ``Harness`` subclasses it
exports in ``__all__`` (``verifiers.v1.utils.loaders``). That package re-exports the classes below, and
:func:`load_environment` builds the same env from keyword arguments (the older hub convention)::

    env = load_environment(env_id="MemoryConsolidation-ScienceWorld-v1", seeds=[0, 1],
                           families=["grow-plant"], env_kwargs={"max_tool_calls": 6})

How an episode runs (verifiers' own pattern for a stepping engine, as its OpenEnv and TextArena tasksets do):
:class:`ConsolidationEnv` ``.run`` resets the gym env host-side, sends the rendered observation as the user
turn, and each model reply is one tool call (``{"tool": NAME, ...}`` or the OpenAI ``{"name", "arguments"}``
form; docs/env.md, "Action") that goes to ``env.step`` unchanged; the next turn is its result and the budget
(:func:`later_turn`). A bad call is an observation, as in the gym env. The episode ends when the env commits
(``commit``, or the tool calls run out) or verifiers stops the exchange (``max_turns``, a timeout); the rollout's
reward ``consolidation_reward`` is the sum of the env's step rewards, so it equals the Gymnasium env's on the same
seed and calls. All rollouts of one run share one
reward service per id and settings (started in ``Env.start``, closed in ``Env.stop``).

The model runs in verifiers' tool-less chat program (its ``null`` harness), launched with this interpreter
rather than a ``uv``-built script environment (:class:`ConsolidationHarness`): the program's packages
(openai, mcp, httpx) are ours already, and no download happens at rollout time.

verifiers is optional: only this module and ``dreamer_gym_verifiers`` import it (install: docs/verifiers.md).
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

try:
    import verifiers.v1 as vf
    from verifiers.v1.harnesses.null import NullHarness
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE
    from verifiers.v1.runtimes import ProgramResult, Runtime, SubprocessConfig
except ImportError as exc:  # pragma: no cover - the message is the test
    from gymnasium.error import DependencyNotInstalled

    raise DependencyNotInstalled(
        "the verifiers adapter needs verifiers 0.4: run `make setup`, or see docs/verifiers.md (\"Install\") for "
        "the pip lines (verifiers pins openai<3 and mcp==2.0.0, so it is installed with --no-deps)") from exc
from pydantic import Field

from dreamer_gym.contract.ids import REGISTERED
from dreamer_gym.envs.consolidation import ConsolidationEnv as GymConsolidationEnv
from dreamer_gym.envs.wrappers import render_state, system_prompt
from dreamer_gym.service import RewardService, make_reward_service

TASKSET_ID = "dreamer-gym-verifiers"
DEFAULT_ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
REWARD = "consolidation_reward"


class ConsolidationTasksetConfig(vf.TasksetConfig):
    """Which episodes a run plays: one task per (seed, family), all on one id and its settings."""

    env_id: str = DEFAULT_ENV_ID
    """A registered consolidation id (``dreamer_gym.list_ids()``)."""
    seeds: list[int] = Field(default_factory=lambda: [0])
    """Reset seeds: the bank and episode draw, as ``env.reset(seed=...)``."""
    families: list[str | None] = Field(default_factory=lambda: [None])
    """Reset option ``family`` per task; ``None`` lets the env draw the region."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments of ``gym.make(env_id, ...)``: free knobs such as ``max_tool_calls``; a field the id
    freezes raises ``FrozenParameterError`` unless ``experiment`` is set."""
    experiment: bool = False
    """Build ``ConsolidationEnv.experiment(env_id, **env_kwargs)`` instead: any field may change, and commits
    that change the reward say ``comparable: False``."""


class ConsolidationData(vf.TaskData):
    """One episode: what the env is built and reset with."""

    env_id: str
    seed: int
    family: str | None = None
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    experiment: bool = False


class ConsolidationTask(vf.Task[ConsolidationData]):
    """No task-side hooks: the env's own commit reward is recorded by :class:`ConsolidationEnv`."""


class ConsolidationTaskset(vf.Taskset[ConsolidationTask, ConsolidationTasksetConfig]):
    """Tasks for every (seed, family) of the config, in that order."""

    def load(self) -> Iterator[ConsolidationTask]:
        config = self.config
        for seed in config.seeds:
            for family in config.families:
                yield ConsolidationTask(
                    ConsolidationData(name=f"{config.env_id}#{family or 'any'}#{seed}", prompt=None,
                                      system_prompt=system_prompt(REGISTERED.get(config.env_id, {}).get("tool_contract", 1)),
                                      env_id=config.env_id, seed=seed, family=family,
                                      env_kwargs=dict(config.env_kwargs), experiment=config.experiment),
                    config.task)


class ConsolidationHarness(NullHarness):
    """verifiers' chat program (the ``null`` harness's) run by this interpreter instead of a ``uv`` script env.

    The null harness builds its program's environment with ``uv sync --script`` on first use, which needs uv
    and a package index at rollout time; our environment already has the program's packages, so the program
    file is written once and run with ``sys.executable``. Everything else (arguments, the interception
    endpoint, the trace) is the null harness's own ``launch``."""

    async def setup(self, runtime: Runtime) -> None:
        """Nothing to build: the program runs on this interpreter."""

    async def launch(self, ctx: Any, trace: Any, runtime: Runtime, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData,
                     tool_interception_url: str | None = None) -> ProgramResult:
        _use_this_interpreter(runtime)
        return await super().launch(ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url)


def _use_this_interpreter(runtime: Runtime) -> None:
    """Point the runtime's prepared-script table at this interpreter for the chat program, writing the
    program where ``prepare_uv_script`` would have (the table is how it skips a script it prepared)."""
    if runtime.type != "subprocess":
        raise vf.HarnessError(f"{TASKSET_ID}'s harness runs the chat program with this interpreter, so the "
                              f"agent runtime must be `subprocess`, got {runtime.type!r}")
    data = CHAT_PROGRAM_SOURCE.encode()
    directory = Path(runtime.scripts_dir)
    path = directory / f"{hashlib.sha256(data).hexdigest()}.py"
    if str(path) not in runtime._uv_interpreters:  # noqa: SLF001 - the runtime's own cache of prepared scripts
        directory.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        runtime._uv_interpreters[str(path)] = sys.executable  # noqa: SLF001


def _player_default() -> vf.AgentConfig:
    """The seat: the chat program on this machine. Its harness is left to verifiers, which takes the Harness
    the taskset package exports (:class:`ConsolidationHarness`)."""
    return vf.AgentConfig(runtime=SubprocessConfig())


class ConsolidationEnvConfig(vf.EnvConfig):
    """One seat, ``player``: the model consolidating. Its runtime is ``subprocess`` (the chat program only)."""

    player: vf.AgentConfig = _player_default()


class ConsolidationEnv(vf.Env[ConsolidationEnvConfig]):
    """The gym env steps host-side as the run's user: each reply is one tool call, each observation a turn.

    Rollouts run concurrently (``--max-concurrent``); those of one id and settings share one reward service,
    which is not thread-safe, so every env call on it (reset, step, close) holds that service's lock. The
    model's turns, the slow part, still overlap."""

    async def start(self) -> None:
        self._services: dict[str, tuple[RewardService, asyncio.Lock]] = {}
        self._services_lock = asyncio.Lock()

    async def stop(self) -> None:
        services, self._services = getattr(self, "_services", {}), {}
        for service, _ in services.values():
            await asyncio.to_thread(service.close)

    async def _shared_service(self, data: ConsolidationData) -> tuple[RewardService, asyncio.Lock]:
        """The run's reward service for the task's id and settings, built on first use."""
        key = json.dumps([data.env_id, data.env_kwargs, data.experiment], sort_keys=True)
        async with self._services_lock:
            if key not in self._services:
                config = await asyncio.to_thread(_env_config, data)
                service = await asyncio.to_thread(make_reward_service, config.service, config)
                self._services[key] = (service, asyncio.Lock())
        return self._services[key]

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        data: ConsolidationData = task.data
        service, lock = await self._shared_service(data)

        async def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
            async with lock:
                return await asyncio.to_thread(fn, *args, **kwargs)

        env = await call(make_gym_env, data.env_id, data.env_kwargs, service, experiment=data.experiment)
        total, committed, info, calls = 0.0, False, {}, []
        try:
            obs, info = await call(env.reset, seed=data.seed, options={"family": data.family} if data.family else None)
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn(render_state(obs))
                while not segment.terminated:
                    calls.append(reply_action(segment))
                    obs, reward, terminated, truncated, info = await call(env.step, calls[-1])
                    total += float(reward)
                    if terminated or truncated:
                        committed = True
                        break
                    segment = await interaction.turn(later_turn(obs))
            trace = interaction.trace
            trace.record_reward(REWARD, total)
            trace.info["calls"] = calls  # what the env took, in order: replayable on gym.make
            trace.record_metrics({"tool_calls": len(calls), "committed": float(committed),
                                  "invalid_calls": float(info.get("invalid_calls", 0))})
            trace.info["commit"] = {k: info[k] for k in ("score_before", "score_after", "comparable") if k in info}
        finally:
            await call(env.close)


def later_turn(observation: dict[str, Any]) -> str:
    """A turn after the first: the last result and the budget. The region was the first turn and stays in the
    conversation, so it is not sent again (a 40-entry region is ~3,000 tokens; six copies would outgrow a
    small model's context)."""
    return render_state({**observation, "region": ""}).lstrip()


def reply_action(segment: Any) -> str:
    """The tool call a segment's reply makes, as the JSON string ``env.step`` takes: the reply text, or where
    the model answered with native tool calls, the first of them in the OpenAI form the env accepts."""
    for message in reversed(segment.messages):
        calls = getattr(message, "tool_calls", None)
        if calls:
            call = calls[0]
            return json.dumps({"name": call.name, "arguments": call.arguments})
    return _strip_fence(segment.last_reply)


def _strip_fence(text: str) -> str:
    text = text.strip()
    if text.startswith("```") and text.endswith("```"):
        text = "\n".join(text.splitlines()[1:-1]).strip()
    return text


def make_gym_env(env_id: str, env_kwargs: dict[str, Any], service: RewardService | None, *,
                 experiment: bool = False) -> GymConsolidationEnv:
    """The id's env as ``gym.make(env_id, **env_kwargs)`` builds it, or with ``experiment``
    ``ConsolidationEnv.experiment`` (any field may change; its commits say ``comparable: False`` where the
    reward changed), on ``service`` when given (the env then uses it and does not close it)."""
    import gymnasium as gym

    import dreamer_gym  # noqa: F401 - registers the ids

    if experiment:
        return GymConsolidationEnv.experiment(env_id, reward_service=service, **env_kwargs)
    return gym.make(env_id, reward_service=service, **env_kwargs).unwrapped


def _env_config(data: ConsolidationData) -> Any:
    """The settings a task's env runs under (what its reward service is built from)."""
    env = make_gym_env(data.env_id, data.env_kwargs, None, experiment=data.experiment)
    try:
        return env.config
    finally:
        env.close()


def load_environment(env_id: str = DEFAULT_ENV_ID, seeds: list[int] | None = None,
                     families: list[str | None] | None = None, env_kwargs: dict[str, Any] | None = None,
                     experiment: bool = False, **player: Any) -> ConsolidationEnv:
    """The verifiers env for ``env_id`` (kwargs as in :class:`ConsolidationTasksetConfig`); ``player`` goes to
    the seat's ``vf.AgentConfig`` (``max_turns``, ``sampling``, ...). Same as what ``vf-eval dreamer-gym-verifiers
    --env.taskset.env-id ID ...`` builds."""
    taskset = ConsolidationTasksetConfig(id=TASKSET_ID, env_id=env_id, seeds=list(seeds or [0]),
                                         families=list(families or [None]), env_kwargs=dict(env_kwargs or {}),
                                         experiment=experiment)
    seat = vf.AgentConfig(**{"runtime": SubprocessConfig(), **player})
    return ConsolidationEnv(ConsolidationEnvConfig(taskset=taskset, player=seat))
