"""The consolidation env as a TRL ``environment_factory`` for GRPO with tool-calling chat models (Qwen-style).

TRL (``GRPOTrainer(environment_factory=...)``) builds one object per rollout and reuses it across batches:
``reset(**row)`` gets the dataset row and returns text that TRL appends to the row's last user message, and
every other public function of the class becomes a tool, its JSON schema read by transformers'
``get_json_schema`` from the type hints and the ``Args:`` docstring. Hence the rules this module keeps:

* the class's only public functions are ``reset`` and the tools (helpers are ``_private``; counters are
  attributes, which TRL does not list);
* the region is shown once, in ``reset``'s text; a tool answers with its short result only;
* tools call ``ConsolidationEnv.act`` (a step that does not score the commit): scoring happens once per batch
  in :func:`commit_reward`, which sends every rollout's commit to the reward service in one ``commit_many``
  call, so a GRPO batch costs one evaluation run instead of one per rollout.

Example::

    factory = make_environment_factory("MemoryConsolidation-ScienceWorld-v1")
    trainer = GRPOTrainer(model, reward_funcs=[commit_reward], environment_factory=factory, ...)
    trainer.train()
    factory.close()
"""
from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

import dreamer_gym  # noqa: F401 - registers the ids gym.make builds
from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.service import CommitResult, RewardService, make_reward_service
from dreamer_gym.training.learning_signal import check_batch

log = logging.getLogger(__name__)

DEFAULT_ENV_ID = "MemoryConsolidation-ScienceWorld-v1"
EPISODE_OVER = "ERROR: the episode is over (committed); no more tool calls count. Stop calling tools."
NO_EPISODE = "ERROR: no episode: reset() was not called."
_COMMIT = json.dumps({"tool": "commit"})


def _build_env(env_id: str, experiment: bool, reward_service: RewardService | None, **env_kwargs: Any) -> gym.Env:
    """The id's env as ``gym.make`` builds it, or, with ``experiment``, ``ConsolidationEnv.experiment`` (which
    may override reward-defining fields such as the evaluation sizes; its commits say ``comparable: False``)."""
    if experiment:
        return ConsolidationEnv.experiment(env_id, reward_service=reward_service, **env_kwargs)
    return gym.make(env_id, reward_service=reward_service, **env_kwargs)


def _has_text(prompt: Any) -> bool:
    """Whether a dataset ``prompt`` (plain text or chat messages) ends in non-empty text."""
    if isinstance(prompt, str):
        return bool(prompt.strip())
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        content = prompt[-1].get("content")
        return bool(content) and (not isinstance(content, str) or bool(content.strip()))
    return False


class ConsolidationToolEnv:
    """One GRPO rollout of one consolidation episode, driven through tool calls (TRL ``environment_factory``).

    The reward is :func:`commit_reward`, a batched reward function, not a ``get_reward`` method: TRL calls
    ``get_reward`` on each environment one after the other, so every rollout would pay its own evaluation run;
    ``commit_reward`` gets all the batch's environments at once and scores their commits with one
    ``service.commit_many`` call (same rewards as ``env.step``, one evaluation run). All environments of a batch
    must therefore share one reward service: build them with :func:`make_environment_factory`.

    Per-rollout counters, for logging: ``tool_counts`` (calls per tool, as the model made them),
    ``invalid_calls`` (calls the env refused), ``calls_after_end``, ``tool_reward`` (the sum of the tool calls'
    rewards, i.e. their invalid-call penalties), ``valid_calls`` (calls the env accepted), ``forced_commit`` (the
    rollout ended without committing and :func:`commit_reward` committed the region as it is for it), and after
    scoring ``episode_reward`` and ``last_commit_info``. ``reset_key`` (seed, family, bank) names the rollout's
    group: the rollouts of one dataset row share it.
    """

    def __init__(self, env_id: str = DEFAULT_ENV_ID, reward_service: RewardService | None = None, *,
                 experiment: bool = False, **env_kwargs: Any) -> None:
        """``reward_service``: the batch's shared service (None: the env builds and owns its own, which
        :func:`commit_reward` refuses to batch with others). ``experiment``: build with
        ``ConsolidationEnv.experiment`` instead of ``gym.make`` (see :func:`_build_env`). ``env_kwargs`` go to
        the env (budgets, ``service``, ``store_path``, ...). Nothing is built before the first ``reset``."""
        self.env_id = env_id
        self.reward_service = reward_service
        self.experiment = experiment
        self.env_kwargs = env_kwargs
        self.env: gym.Env | None = None
        self.reset_key: tuple[Any, ...] = ()
        self._reset_counters()

    def _reset_counters(self) -> None:
        self.tool_counts: Counter[str] = Counter()
        self.invalid_calls = 0
        self.valid_calls = 0
        self.calls_after_end = 0
        self.tool_reward = 0.0
        self.forced_commit = False
        self.episode_reward: float | None = None  # set when the commit is scored
        self.last_commit_info: dict[str, Any] | None = None
        self._reward_before_commit = 0.0  # the act rewards of the calls before the committing one
        self._emitted: list[str] = []  # the ids in the new region so far, in order (what a forced commit undoes)
        self._over = False

    @property
    def _core(self) -> ConsolidationEnv:
        assert self.env is not None  # noqa: S101 - internal: callers check
        return self.env.unwrapped  # type: ignore[return-value]

    # --- TRL's entry points ---------------------------------------------------------------------------------
    def reset(self, seed: int, family: str | None = None, bank: int | None = None, **row: Any) -> str:
        """Start the episode of ``seed`` (``family`` and ``bank`` as the env's reset options; None draws them).
        ``row``: the dataset row's other columns (TRL passes the whole row, ``prompt`` included). Returns the
        region listing and the budget: the one time the region is shown."""
        if self.env is None:
            self.env = _build_env(self.env_id, self.experiment, self.reward_service, **self.env_kwargs)
        self._reset_counters()
        self.reset_key = (seed, family, bank)
        obs, _ = self.env.reset(seed=seed, options={"family": family, "bank": bank})
        calls, emits, new, size = (int(x) for x in obs["budget"])
        text = (f"{obs['region']}\n\nBudget: {calls} tool calls, {emits} new entries (emit), {new} entries in the "
                f"new region, {size} entries in the region.")
        # TRL appends this to the last user message with no separator
        return f"\n\n{text}" if _has_text(row.get("prompt")) else text

    def read_entry(self, id: str) -> str:
        """Show one entry of the region with its provenance.

        Args:
            id: The id of an entry of the region.
        """
        return self._call("read_entry", id=id)

    def read_trajectory(self, id: str, start: int = 0, end: int | None = None) -> str:
        """Show steps start..end (at most 20) of a trajectory linked from the region's provenance.

        Args:
            id: The trajectory id, as cited in an entry's provenance.
            start: The first step to show.
            end: The last step to show (default: 19 steps after start).
        """
        args: dict[str, Any] = {"id": id, "start": start}
        if end is not None:
            args["end"] = end
        return self._call("read_trajectory", **args)

    def search(self, query: str, k: int = 5) -> str:
        """Search the region's entries (BM25) and list the best matches.

        Args:
            query: The words to search for.
            k: How many entries to return, 1 to 20.
        """
        return self._call("search", query=query, k=k)

    def keep(self, ids: list[str]) -> str:
        """Carry region entries over into the new region verbatim (does not use the emit budget).

        Args:
            ids: The ids of the region entries to keep.
        """
        return self._call("keep", ids=ids)

    def emit(self, kind: str, text: str, provenance: list[str]) -> str:
        """Write a new entry into the new region.

        Args:
            kind: The kind of entry. (choices: ["procedure", "insight", "fact", "pitfall"])
            text: The entry's text.
            provenance: The ids of the region entries it is based on.
        """
        return self._call("emit", kind=kind, text=text, provenance=provenance)

    def retract(self, index: int) -> str:
        """Drop one entry from the new region.

        Args:
            index: The 0-based position of the entry in the new region.
        """
        return self._call("retract", index=index)

    def commit(self) -> str:
        """Replace the region with the new region and end the episode (the reward comes with the batch)."""
        return self._call("commit")

    # --- the step -----------------------------------------------------------------------------------------------
    def _call(self, tool: str, **args: Any) -> str:
        """One tool call through ``act``; returns the result text (never raises for a bad call)."""
        self.tool_counts[tool] += 1
        if self.env is None:
            return NO_EPISODE
        if self._over:
            self.calls_after_end += 1
            return EPISODE_OVER
        obs, reward, terminated, truncated, info = self._core.act(json.dumps({"tool": tool, **args}, default=str))
        self.tool_reward += reward
        self._emitted = [e["id"] for e in info["emitted"]]
        if info["last_error"] is not None:
            self.invalid_calls += 1
        else:
            self.valid_calls += 1
        if not info.get("commit_pending"):
            self._reward_before_commit += reward
            return str(obs["result"])
        self._over = True
        if terminated:
            return f"Committed {len(info['emitted'])} entries; the episode is over (the reward comes with the batch)."
        return (f"{obs['result']}\nNo tool calls left: the new region ({len(info['emitted'])} entries) is committed "
                "and the episode is over.")

    def _commit_if_open(self) -> None:
        """Commit a rollout that ended without committing, with the region as it is: ``keep`` of every region
        entry not in the new region, ``retract`` of every entry the rollout wrote, then ``commit`` (score delta
        0, size term 0). Why not what was emitted: the model never said it was done, and a half-built new
        region (often none: a model that makes no parseable call) would be scored as its decision; committing
        an empty region pays the size term of deleting everything. These calls count against the env's
        budget like any other (the rollout had at least one left, or the env would have committed it); if the
        budget runs out first the env commits where it stands, with every region entry already kept."""
        if self.env is None:
            raise ValueError("commit_reward got an environment that was never reset")
        if self._core.pending_commit is None:
            self.forced_commit = True
            region, present = self._core.region_ids, set(self._emitted)
            missing = [i for i in region if i not in present]
            calls = [json.dumps({"tool": "keep", "ids": missing})] if missing else []
            # kept entries go to the end, so the written ones keep their indices: retract them last-first
            written = [k for k, i in enumerate(self._emitted) if i not in set(region)]
            calls += [json.dumps({"tool": "retract", "index": k}) for k in reversed(written)] + [_COMMIT]
            for call in calls:
                _, reward, _, _, info = self._core.act(call)
                self.tool_reward += reward
                if info.get("commit_pending"):
                    break
            assert info.get("commit_pending")  # noqa: S101 - the commit (or the budget) always ends the episode
            if len(info["emitted"]) != len(region):
                log.warning("the forced commit ran out of tool calls before undoing the rollout's writes: it "
                            "committed the region plus %d written entries", len(info["emitted"]) - len(region))
        self._over = True

    def _settle(self, result: CommitResult) -> float:
        """Finish the commit with the service's result; the episode's reward (what ``step`` would have summed)."""
        _, reward, _, _, info = self._core.settle(result)
        self.last_commit_info = info
        self.episode_reward = self._reward_before_commit + float(reward)
        return self.episode_reward


class BankToolEnv(ConsolidationToolEnv):
    """:class:`ConsolidationToolEnv` for an id of tool contract 2 (``ScienceWorld-v2``, ``ScienceWorldWindows-v1``):
    ``search`` reaches the whole bank and ``synthesize`` is a tool. A class of its own because TRL reads the tools
    off the class's public functions: a contract-1 rollout must not be offered a tool its env refuses."""

    def search(self, query: str, k: int = 5, scope: str = "bank") -> str:
        """Search the bank's entries (BM25; hits outside the region are read-only) and list the best matches.

        Args:
            query: The words to search for.
            k: How many entries to return, 1 to 20.
            scope: Where to search. (choices: ["bank", "region"])
        """
        return self._call("search", query=query, k=k, scope=scope)

    def synthesize(self, task: str, trajectories: str = "success", min_support: float = 0.5,
                   kind: str = "procedure") -> str:
        """Get one candidate entry aligned from the region's trajectories of a task (it writes nothing: emit it,
        edit it, or drop it).

        Args:
            task: A task (family) the region's linked trajectories were played for.
            trajectories: Which of them. (choices: ["success", "all"])
            min_support: The share of them a step or fact must appear in, above 0 and at most 1.
            kind: A procedure or the facts they share. (choices: ["procedure", "fact"])
        """
        return self._call("synthesize", task=task, trajectories=trajectories, min_support=min_support, kind=kind)


def tool_env_class(contract: int) -> type[ConsolidationToolEnv]:
    """The rollout class whose tools are those of tool contract ``contract``."""
    return BankToolEnv if contract >= 2 else ConsolidationToolEnv


def _shared_service(environments: Sequence[ConsolidationToolEnv]) -> RewardService:
    for e in environments:
        if not isinstance(e, ConsolidationToolEnv):
            raise TypeError(f"commit_reward scores ConsolidationToolEnv rollouts, got {type(e).__name__}")
        if e.env is None:
            raise ValueError("commit_reward got an environment that was never reset")
    services = {id(e._core.service): e._core.service for e in environments}
    if len(services) > 1:
        raise ValueError(f"commit_reward scores a batch with one commit_many call, so every environment must share "
                         f"one reward service; this batch has {len(services)}. Build the environments with "
                         "make_environment_factory (or pass them all the same reward_service=).")
    return next(iter(services.values()))


def commit_reward(completions: list[Any], environments: Sequence[ConsolidationToolEnv],
                  log_metric: Callable[[str, float], None] | None = None, **kwargs: Any) -> list[float]:
    """TRL reward function: each rollout's episode reward, the batch's commits scored in one ``commit_many``.

    A rollout that did not commit (it stopped calling tools, or hit the completion length) is committed here
    with the region as it is (:meth:`ConsolidationToolEnv._commit_if_open`). The batch's learning signal is
    checked (:func:`.learning_signal.check_batch`: zero reward spread within a group of one reset, no valid call). Each reward is the sum of the rewards ``env.step`` would have returned over
    the episode. Already scored environments keep their reward (no second commit). ``log_metric`` (TRL passes
    it) receives the batch means of the counters."""
    if not environments:
        return []
    service = _shared_service(environments)
    todo = list({id(e): e for e in environments if e.episode_reward is None}.values())
    for e in todo:
        e._commit_if_open()
    if todo:
        results = service.commit_many([e._core.pending_commit for e in todo])
        if len(results) != len(todo):
            raise RuntimeError(f"the reward service answered {len(results)} results for {len(todo)} commits")
        for e, result in zip(todo, results, strict=True):
            e._settle(result)
    rewards = [float(e.episode_reward) for e in environments]  # type: ignore[arg-type]
    signal = check_batch(rewards, [e.reset_key for e in environments], sum(e.valid_calls for e in environments),
                         where="TRL environment_factory batch",
                         hint="the model made no tool call TRL could parse: check its chat template (recipe "
                              "`model.chat_template`) or use path: text, whose grammar cannot miss")
    if log_metric is not None:
        _log_counters(environments, log_metric)
        log_metric("signal/flat_groups", signal.flat_share)
        log_metric("signal/valid_calls", float(signal.valid_calls or 0))
    return rewards


def _log_counters(environments: Sequence[ConsolidationToolEnv], log_metric: Callable[[str, float], None]) -> None:
    n = len(environments)
    log_metric("consolidation/invalid_calls", sum(e.invalid_calls for e in environments) / n)
    log_metric("consolidation/calls_after_end", sum(e.calls_after_end for e in environments) / n)
    log_metric("consolidation/forced_commit", sum(e.forced_commit for e in environments) / n)
    log_metric("consolidation/tool_reward", sum(e.tool_reward for e in environments) / n)
    total: Counter[str] = Counter()
    for e in environments:
        total.update(e.tool_counts)
    for tool, count in sorted(total.items()):
        log_metric(f"consolidation/calls_{tool}", count / n)


class EnvironmentFactory:
    """A zero-argument callable for TRL's ``environment_factory``: each call builds one
    :class:`ConsolidationToolEnv`, all sharing one reward service (so :func:`commit_reward` can batch them).
    ``close()`` closes the envs it built and the service it built."""

    def __init__(self, env_id: str = DEFAULT_ENV_ID, reward_service: RewardService | None = None, *,
                 experiment: bool = False, **env_kwargs: Any) -> None:
        """``reward_service``: a service to share (not closed by :meth:`close`); by default one is built for
        the id's config (``config.service``; the process service starts on the first reset)."""
        self.env_id, self.experiment, self.env_kwargs = env_id, experiment, env_kwargs
        self._owns_service = reward_service is None
        probe = _build_env(env_id, experiment, reward_service, **env_kwargs)  # cheap: nothing starts before a reset
        config = probe.unwrapped.config  # type: ignore[attr-defined]
        probe.close()
        self.tool_env_class = tool_env_class(config.tool_contract)
        if reward_service is None:
            reward_service = make_reward_service(config.service, config)
        self.service: RewardService = reward_service
        self.environments: list[ConsolidationToolEnv] = []

    def __call__(self) -> ConsolidationToolEnv:
        env = self.tool_env_class(self.env_id, self.service, experiment=self.experiment, **self.env_kwargs)
        self.environments.append(env)
        return env

    def close(self) -> None:
        for tool_env in self.environments:
            if tool_env.env is not None:
                tool_env.env.close()
                tool_env.env = None
        self.environments.clear()
        if self._owns_service:
            self.service.close()

    def __enter__(self) -> EnvironmentFactory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_environment_factory(env_id: str = DEFAULT_ENV_ID, reward_service: RewardService | None = None, *,
                             experiment: bool = False, **env_kwargs: Any) -> EnvironmentFactory:
    """The ``environment_factory`` for ``GRPOTrainer``: one :class:`ConsolidationToolEnv` per call, one shared
    reward service (see :class:`EnvironmentFactory`)."""
    return EnvironmentFactory(env_id, reward_service, experiment=experiment, **env_kwargs)
