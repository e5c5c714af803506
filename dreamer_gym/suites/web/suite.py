"""The :class:`~dreamer_gym.suites.base.TaskSuite` lifecycle shared by the BrowserGym suites (MiniWoB++,
WebArena): one warm browser, actions in the semantic language, BrowserGym's reward as the score."""

from __future__ import annotations

import os
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Self

from dreamer_gym.errors import SuiteError
from dreamer_gym.suites.base import SPLITS, EpisodeTask, StepOutcome
from dreamer_gym.suites.web.actions import (
    ACTION_FORMS,
    BASE_VERBS,
    RAW_ACTION,
    WEB_VERBS,
    parse_command,
    semantic_actions,
    translate,
)
from dreamer_gym.suites.web.chromium import DEFAULT_CHROMIUM, check_chromium, chromium_wrapper, default_cache_dir
from dreamer_gym.suites.web.page import Page, norm, read_page
from dreamer_gym.suites.web.warm_env import lean_playwright_stacks, warm_env_class


class BrowserGymSuite:
    """The :class:`~dreamer_gym.suites.base.TaskSuite` lifecycle over BrowserGym tasks in one warm headless
    Chromium: start, step in the action language, score, close. A subclass names its families and splits
    and says which BrowserGym task class and kwargs play an :class:`EpisodeTask` (:meth:`_task_entry`).

    Constructing one checks that Chromium is installed and starts nothing; the browser starts on the first
    :meth:`start` and stays up until :meth:`close`. An episode ends when the task ends it or after
    ``step_limit`` actions (bad ones count).
    """

    name: str = ""
    label: str = "BrowserGym"  # the benchmark's name in error messages
    families: tuple[str, ...] = ()
    verbs: frozenset[str] = BASE_VERBS  # the semantic verbs this suite speaks
    action_forms: str = ACTION_FORMS
    fresh_context: bool = False  # a new browser context (cookies, storage) for every episode

    def __init__(
        self,
        step_limit: int,
        chromium: str | os.PathLike[str] = DEFAULT_CHROMIUM,
        cache_dir: str | os.PathLike[str] | None = None,
        lean_stacks: bool = True,
    ) -> None:
        if not isinstance(step_limit, int) or isinstance(step_limit, bool) or step_limit <= 0:
            raise ValueError(f"Expected `step_limit` to be a positive int, got {step_limit!r}")
        self.chromium = check_chromium(chromium)
        self.step_limit = step_limit
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir(self.name)
        self.lean_stacks = lean_stacks
        self._env: Any = None
        self._task: EpisodeTask | None = None
        self._page: Page | None = None
        self._description = ""
        self._steps = 0
        self._score = 0.0
        self._done = False

    # --- what a subclass says ------------------------------------------------------------------------------
    def _task_entry(self, task: EpisodeTask) -> tuple[type, dict[str, Any]]:
        """The BrowserGym task class and its kwargs for ``task`` (imports the benchmark's package: a missing
        extra fails here, before any browser starts)."""
        raise NotImplementedError

    def _reward_to_score(self, reward: float) -> float:
        """The suite's score (0-100) for BrowserGym's reward."""
        return 100.0 if reward > 0 else 0.0

    def _check(self, family: str, split: str | None = None) -> None:
        if family not in self.families:
            raise ValueError(f"Expected `family` to be one of {self.families}, got {family!r}")
        if split is not None and split not in SPLITS:
            raise ValueError(f"Expected `split` to be one of {SPLITS}, got {split!r}")

    # --- lifecycle -----------------------------------------------------------------------------------------
    def _ensure_env(self, task: EpisodeTask) -> Any:
        entry, kwargs = self._task_entry(task)
        if self._env is None:
            wrapper = chromium_wrapper(self.cache_dir, self.chromium)
            # for BrowserGym envs made elsewhere in this process (e.g. stock gym.make): only where unset
            os.environ.setdefault("PLAYWRIGHT_BROWSERS_PATH", str(wrapper.parents[2]))
            self._env = warm_env_class()(entry, kwargs, wrapper, fresh_context=self.fresh_context)
        self._env.task_entrypoint, self._env.task_kwargs = entry, kwargs
        return self._env

    def _calls(self) -> Any:
        return lean_playwright_stacks() if self.lean_stacks else nullcontext()

    def close(self) -> None:
        """Close the page, context, browser and (if this suite started it) playwright's driver; no
        Chromium process outlives this call. A closed suite can start again."""
        env, self._env, self._task, self._page = self._env, None, None, None
        if env is not None:
            with self._calls():
                env.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- protocol ------------------------------------------------------------------------------------------
    def start(self, task: EpisodeTask) -> str:
        """Load ``task`` (BrowserGym's task reset with seed ``task.variation``) and return the page as text."""
        self._check(task.family)
        variation = int(task.variation)
        env = self._ensure_env(task)
        try:
            with self._calls():
                obs, _ = env.reset(seed=variation)
        except Exception as exc:  # noqa: BLE001 - playwright/BrowserGym errors carry the cause
            self._task = None
            raise SuiteError(f"{self.label} could not load {task}: {type(exc).__name__}: {exc}") from exc
        self._task, self._steps, self._score, self._done = task, 0, 0.0, False
        self._description = norm(obs["goal"])
        self._page = read_page(obs)
        return self._page.text

    def task_description(self) -> str:
        return self._description

    def step(self, action: str) -> StepOutcome:
        if self._task is None or self._env is None or self._page is None:
            raise RuntimeError("call start() before step()")
        if self._done:
            return StepOutcome("The episode is over; call start() for the next one.", self._score, True)
        self._steps += 1
        raw = RAW_ACTION.match(action or "")
        command = None if raw else parse_command(action or "")
        if command is not None and command.verb not in self.verbs:
            command = None
        if raw is None and command is None:
            return self._refuse(f"Unknown action {action!r}. Accepted forms: {self.action_forms}.")
        if command is not None:
            bg_action, why = translate(command, self._page)
            if bg_action is None:
                return self._refuse(f"No known action matches {action!r}: {why}. Accepted forms: {self.action_forms}.")
        else:
            bg_action = action.strip()
        try:
            with self._calls():
                obs, reward, terminated, truncated, _ = self._env.step(bg_action)
        except Exception as exc:  # noqa: BLE001 - the browser or page died under the action
            raise SuiteError(f"{self.label} step {action!r} ({bg_action}) failed: {type(exc).__name__}: {exc}") from exc
        self._page = read_page(obs)
        self._score = self._reward_to_score(float(reward))
        self._done = bool(terminated or truncated) or self._steps >= self.step_limit
        text = self._page.text
        if obs.get("last_action_error"):
            text = f"Action failed: {obs['last_action_error'].strip().splitlines()[0]}\n{text}"
        return StepOutcome(text, self._score, self._done)

    def _refuse(self, message: str) -> StepOutcome:
        self._done = self._steps >= self.step_limit
        return StepOutcome(f"{message}\n{self._page.text if self._page else ''}".rstrip(), self._score, self._done)

    def inventory(self) -> str:
        """The focused control (``""`` when none): what typing or ``press`` would act on."""
        if self._page is None:
            raise RuntimeError("call start() first")
        focused = self._page.focused()
        return f"focused: {focused.describe()}" if focused is not None else ""

    def look(self) -> str:
        """The page as text now (a page has no separate look action; this spends no move)."""
        if self._page is None:
            raise RuntimeError("call start() first")
        return self._page.text

    def valid_actions(self) -> tuple[str, ...]:
        """Closed-form semantic actions over the rendered controls now (typing is open: ``type "TEXT" into
        "FIELD"`` is accepted but not listed)."""
        if self._page is None:
            raise RuntimeError("call start() first")
        return semantic_actions(self._page, web=bool(self.verbs & WEB_VERBS))

    def num_moves(self) -> int:
        return self._steps
