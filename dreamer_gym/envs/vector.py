"""Vector envs that share evaluation: ``gym.make_vec(id, num_envs=N)`` (the ids' ``vector_entry_point``).

Separate envs (``vectorization_mode="sync"`` or ``"async"``, gymnasium's own) each start a reward service,
a simulator and an evaluation cache, so N envs play the same before-scores N times. Here one reward service
serves every sub-env:

* ``vector_mode="sync"`` (default): the sub-envs live in this process and use the service object itself.
  Each :meth:`SharedSyncVectorEnv.step` runs every sub-env up to its commit (``act``), scores all commits of
  the step with ONE ``commit_many`` and hands each env its result (``settle``), then lets gymnasium's
  :class:`~gymnasium.vector.SyncVectorEnv` assemble the batch (autoreset included) from those results.
* ``vector_mode="async"``: the sub-envs live in their own processes (gymnasium's
  :class:`~gymnasium.vector.AsyncVectorEnv`, its default start method) and reach the service through a
  :class:`~dreamer_gym.service.host.ServiceHost` this env starts in its own process, at a local address with
  a random key; the host batches the commits that arrive together. The host starts before the sub-envs and
  stops after them, in :meth:`close`.

Results are identical to separate envs (``commit_many`` equals commits one by one); docs/env.md, "Vector envs".
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

import gymnasium as gym
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import iterate

from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.errors import ConfigError
from dreamer_gym.service import RewardService, make_reward_service
from dreamer_gym.service.host import ServiceHost

VECTOR_MODES = ("sync", "async")
_CONFIG_FIELDS = {f.name for f in dataclasses.fields(ConsolidationConfig)}


class _StagedStep(gym.Wrapper):
    """Returns the step result the vector env computed ahead (so a step's commits score in one batch)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.staged: tuple[Any, ...] | None = None

    def step(self, action: Any) -> tuple[Any, ...]:
        if self.staged is None:
            return self.env.step(action)
        out, self.staged = self.staged, None
        return out


def _sub_env(service: RewardService, env_kwargs: dict[str, Any], staged: bool) -> gym.Env:
    env = ConsolidationEnv(reward_service=service, **env_kwargs)
    return _StagedStep(env) if staged else env


class SharedSyncVectorEnv(SyncVectorEnv):
    """Sub-envs in this process on one reward service; a step's commits are scored in one batch."""

    def __init__(self, num_envs: int, service: RewardService, env_kwargs: dict[str, Any], **vector_kwargs: Any) -> None:
        self.service = service
        self.batch_sizes: list[int] = []  # commits per commit_many (what batching achieved)
        super().__init__([functools.partial(_sub_env, service, env_kwargs, True)] * num_envs, **vector_kwargs)

    def step(self, actions: Any):
        try:
            self._stage(actions)
        except BaseException:
            for env in self.envs:  # nothing staged may outlive a failed step
                env.staged = None  # type: ignore[attr-defined]
            raise
        return super().step(actions)

    def _stage(self, actions: Any) -> None:
        """Every sub-env up to its commit, the step's commits in one batch; results staged for the step."""
        pending = []
        for i, (env, action) in enumerate(zip(self.envs, iterate(self.action_space, actions))):
            if self.autoreset_mode == AutoresetMode.NEXT_STEP and self._autoreset_envs[i]:
                continue  # gymnasium resets it in this step instead
            core: ConsolidationEnv = env.unwrapped  # type: ignore[assignment]
            out = core.act(action)
            if core.pending_commit is None:
                env.staged = out  # type: ignore[attr-defined]
            else:
                pending.append(env)
        if pending:
            results = self.service.commit_many([e.unwrapped.pending_commit for e in pending])
            self.batch_sizes.append(len(pending))
            for env, result in zip(pending, results):
                env.staged = env.unwrapped.settle(result)  # type: ignore[attr-defined]

    def close_extras(self, **kwargs: Any) -> None:
        super().close_extras(**kwargs)
        self.service.close()


class SharedAsyncVectorEnv(AsyncVectorEnv):
    """Sub-envs in their own processes, reaching one reward service through a :class:`ServiceHost`."""

    def __init__(self, num_envs: int, service: RewardService, env_kwargs: dict[str, Any],
                 batch_window_s: float = 0.05, **vector_kwargs: Any) -> None:
        self.service = service
        self.host = ServiceHost(service, batch_window_s=batch_window_s, start=False)
        client = self.host.client()
        vector_kwargs = {"shared_memory": False, **vector_kwargs}
        try:
            super().__init__([functools.partial(_sub_env, client, env_kwargs, False)] * num_envs, **vector_kwargs)
        except BaseException:
            self.host.close()
            service.close()
            raise
        self.host.start()  # after the workers exist: a forked worker holds no copy of the host's threads

    @property
    def batch_sizes(self) -> list[int]:
        return self.host.batch_sizes

    def close_extras(self, timeout: float | None = None, terminate: bool = False) -> None:
        super().close_extras(timeout=timeout, terminate=terminate)
        self.host.close()
        self.service.close()


def make_shared_vec(num_envs: int = 1, vector_mode: str = "sync", vector_kwargs: dict[str, Any] | None = None,
                    **env_kwargs: Any) -> SyncVectorEnv | AsyncVectorEnv:
    """The ids' ``vector_entry_point``: ``num_envs`` sub-envs of one id (``env_kwargs``, frozen fields
    included) sharing one reward service. ``vector_mode``: "sync" or "async" (see the module docstring)."""
    if vector_mode not in VECTOR_MODES:
        raise ConfigError(f"Expected `vector_mode` to be one of {VECTOR_MODES}, got {vector_mode!r}")
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ConfigError(f"Expected `num_envs` to be a positive int, got {num_envs!r}")
    env_kwargs.pop("max_episode_steps", None)  # gymnasium passes the spec's (None here)
    probe = ConsolidationEnv(**env_kwargs)  # checks frozen fields and the config at once, builds nothing heavy
    probe.close()
    config = ConsolidationConfig(**{k: v for k, v in env_kwargs.items() if k in _CONFIG_FIELDS})
    service = make_reward_service(config.service, config)
    if vector_mode == "sync":
        return SharedSyncVectorEnv(num_envs, service, env_kwargs, **(vector_kwargs or {}))
    return SharedAsyncVectorEnv(num_envs, service, env_kwargs, **(vector_kwargs or {}))
