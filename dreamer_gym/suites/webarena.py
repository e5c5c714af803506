"""WebArena through BrowserGym (``browsergym-webarena``), in the warm Chromium and action language of the
MiniWoB suite. Needs the self-hosted WebArena sites (the ``WA_*`` variables): nothing of it runs without them.

- Families are WebArena's sites: a task on one site belongs to that site's family (``shopping``,
  ``shopping_admin``, ``reddit``, ``gitlab``, ``map``), a task spanning several sites to ``multi-site``
  (WebArena has no task on ``wikipedia`` alone; its 23 wikipedia tasks are all multi-site).
- A variation is a WebArena task id (0-811), played as ``browsergym/webarena.<id>``. The task table (id,
  sites, intent template) is shipped as ``dreamer_gym/data/webarena_tasks.json``, copied from the
  ``test.raw.json`` of ``libwebarena==0.0.4`` (what ``browsergym-webarena==0.14.3`` pins), so families and
  splits are known without the package; a test checks the copy against the package where it is installed.
- Splits (:func:`split_of`): ``task_id % 5`` in {0, 1, 2} is train, 3 is dev, 4 is test. WebArena numbers
  the instances of an intent template consecutively, so most templates (161 of 190) have instances on both
  sides of the train/evaluation line: a procedure consolidated from train tasks can transfer to a dev task
  of the same template.
- Actions: the MiniWoB language plus :data:`~dreamer_gym.suites.web.WEB_VERBS`; a task ends
  when the agent answers (``answer "..."``, BrowserGym's ``send_msg_to_user``), and WebArena's own
  evaluator scores it (score = 100 x its reward) or after ``step_limit`` actions.
- Every episode gets a fresh browser context (WebArena logs in per task; no cookies carry over), in the
  one warm browser. WebArena's sites keep state between tasks: reset the servers between runs as the
  WebArena project says.
- There is no oracle: WebArena ships no scripted solutions, so :meth:`WebArenaSuite.gold_path` raises.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from importlib import resources

from dreamer_gym.errors import SuiteError
from dreamer_gym.suites.base import EpisodeTask
from dreamer_gym.suites.spec import SuiteSpec
from dreamer_gym.suites.web import BASE_VERBS, DEFAULT_CHROMIUM, WEB_ACTION_FORMS, WEB_VERBS, BrowserGymSuite, pip_hint

# the self-hosted sites BrowserGym's WebArena tasks talk to (browsergym-webarena reads these variables)
WEBARENA_VARS: tuple[str, ...] = (
    "WA_SHOPPING", "WA_SHOPPING_ADMIN", "WA_REDDIT", "WA_GITLAB", "WA_WIKIPEDIA", "WA_MAP", "WA_HOMEPAGE",
)


def check_webarena(environ: dict[str, str] | None = None) -> None:
    """Raise :class:`SuiteError` naming every missing ``WA_*`` variable and how to get the servers."""
    env = os.environ if environ is None else environ
    missing = [name for name in WEBARENA_VARS if not env.get(name)]
    if missing:
        raise SuiteError(
            f"WebArena needs its self-hosted web sites, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not set. Start the WebArena servers (the shopping, "
            "shopping-admin, reddit, gitlab, wikipedia, map and homepage Docker images of the WebArena "
            "project, see its environment_docker/README.md), then export each URL, e.g. "
            "WA_SHOPPING=http://<host>:7770 WA_SHOPPING_ADMIN=http://<host>:7780/admin WA_REDDIT=http://<host>:9999 "
            "WA_GITLAB=http://<host>:8023 WA_WIKIPEDIA=http://<host>:8888 WA_MAP=http://<host>:3000 "
            "WA_HOMEPAGE=http://<host>:4399, and install the `webarena` extra (browsergym-webarena; see "
            "docs/webarena.md). "
            "On a machine without them, use MemoryConsolidation-MiniWoB-v1 for the web transfer suite."
        )


def check_webarena_package() -> None:
    """Raise ``DependencyNotInstalled`` when browsergym-webarena is missing (looked up, not imported: its
    import downloads NLTK data)."""
    import importlib.util

    if importlib.util.find_spec("browsergym") is None or importlib.util.find_spec("browsergym.webarena") is None:
        import gymnasium

        raise gymnasium.error.DependencyNotInstalled(
            'browsergym-webarena is not installed: run pip install "dreamer-gym[webarena]" in its own '
            "environment (it conflicts with the llm extra; see docs/webarena.md)"
        )


SUITE_NAME = "webarena"
EXTRA = "webarena"
MULTI_SITE = "multi-site"
FAMILIES: tuple[str, ...] = ("shopping", "shopping_admin", "reddit", "gitlab", "map", MULTI_SITE)
SPLIT_OF_REMAINDER: dict[int, str] = {0: "train", 1: "train", 2: "train", 3: "dev", 4: "test"}  # task_id % 5
TASK_TABLE = "webarena_tasks.json"


@dataclass(frozen=True)
class WebArenaTask:
    """One row of WebArena's task table."""

    task_id: int
    sites: tuple[str, ...]
    intent_template_id: int

    @property
    def family(self) -> str:
        return self.sites[0] if len(self.sites) == 1 else MULTI_SITE

    @property
    def split(self) -> str:
        return split_of(self.task_id)


def split_of(task_id: int) -> str:
    """The split of a WebArena task id: ``task_id % 5`` in {0, 1, 2} is train, 3 dev, 4 test."""
    return SPLIT_OF_REMAINDER[int(task_id) % 5]


@functools.cache
def task_table() -> tuple[WebArenaTask, ...]:
    """WebArena's 812 tasks (id, sites, intent template), from the shipped copy of its task list."""
    data = json.loads((resources.files("dreamer_gym") / "data" / TASK_TABLE).read_text())
    return tuple(WebArenaTask(int(t), tuple(s), int(i)) for t, s, i in data["tasks"])


@functools.cache
def _by_id() -> dict[int, WebArenaTask]:
    return {t.task_id: t for t in task_table()}


def _task_class() -> type:
    """BrowserGym's ``GenericWebArenaTask``, imported only when an episode starts. Its package downloads
    NLTK's ``punkt_tab`` on import when it is missing; offline that fails with a network error, so the
    missing tokenizer is named here first (WebArena's string evaluators use it: an empty folder would get
    past the import but break scoring)."""
    import gymnasium

    try:
        import nltk
    except ImportError as exc:
        raise gymnasium.error.DependencyNotInstalled(
            f"browsergym-webarena is not installed ({exc}): run {pip_hint(EXTRA)} in its own environment "
            "(it conflicts with the llm extra; see docs/webarena.md)"
        ) from exc
    try:
        nltk.data.find("tokenizers/punkt_tab")
    except LookupError as exc:
        raise SuiteError(
            "NLTK's punkt_tab tokenizer is missing (WebArena's evaluators use it, and browsergym.webarena "
            "tries to download it on import): run `python -m nltk.downloader punkt_tab` on a machine with "
            "internet access, or point NLTK_DATA at a folder holding tokenizers/punkt_tab"
        ) from exc
    try:
        from browsergym.webarena.task import GenericWebArenaTask
    except ImportError as exc:
        raise gymnasium.error.DependencyNotInstalled(
            f"browsergym-webarena is not installed ({exc}): run {pip_hint(EXTRA)} in its own environment "
            "(it conflicts with the llm extra; see docs/webarena.md)"
        ) from exc
    return GenericWebArenaTask


class WebArenaSuite(BrowserGymSuite):
    """A :class:`~dreamer_gym.suites.base.TaskSuite` over WebArena's tasks on its self-hosted sites.

    Constructing one fails at once (:class:`SuiteError`, naming every missing variable) unless all the
    ``WA_*`` variables are set, then checks that Chromium is installed; it starts nothing. The package is
    imported and the browser launched on the first :meth:`start`.
    """

    name = SUITE_NAME
    label = "WebArena"
    families: tuple[str, ...] = FAMILIES
    verbs = BASE_VERBS | WEB_VERBS
    action_forms = WEB_ACTION_FORMS
    fresh_context = True

    def __init__(
        self,
        step_limit: int = 30,
        chromium: str | os.PathLike[str] = DEFAULT_CHROMIUM,
        cache_dir: str | os.PathLike[str] | None = None,
        lean_stacks: bool = True,
    ) -> None:
        check_webarena()
        super().__init__(step_limit, chromium, cache_dir, lean_stacks)

    def variations(self, family: str, split: str) -> tuple[int, ...]:
        """WebArena task ids of ``family`` in ``split`` (see :func:`split_of`), ascending."""
        self._check(family, split)
        return tuple(t.task_id for t in task_table() if t.family == family and t.split == split)

    def _check_task(self, task: EpisodeTask) -> None:
        self._check(task.family)
        row = _by_id().get(int(task.variation))
        if row is None or row.family != task.family:
            where = f"a {row.family} task" if row is not None else "not a WebArena task id (0-811)"
            raise ValueError(
                f"Expected `variation` to be a task id of the {task.family!r} family, got {task.variation} ({where})"
            )

    def _task_entry(self, task: EpisodeTask) -> tuple[type, dict[str, object]]:
        self._check_task(task)
        return _task_class(), {"task_id": int(task.variation)}

    def _reward_to_score(self, reward: float) -> float:
        return min(max(100.0 * reward, 0.0), 100.0)

    def gold_path(self, task: EpisodeTask) -> tuple[str, ...]:
        """WebArena has no scripted solutions: always raises :class:`SuiteError`."""
        self._check_task(task)
        raise SuiteError(
            f"WebArena has no scripted solutions, so there is no gold path for {task} and the oracle cannot "
            "run on WebArena; evaluate an agent instead (WebArena's own evaluator scores its answer)"
        )


def check_available() -> None:
    """The WA_* sites, Debian's Chromium and browsergym-webarena, checked in that order (nothing started)."""
    from dreamer_gym.suites.web.chromium import check_chromium

    check_webarena()
    check_chromium()
    check_webarena_package()


SPEC = SuiteSpec(
    name=SUITE_NAME,
    adapter="dreamer_gym.suites.webarena:WebArenaSuite",
    families=FAMILIES,
    description="WebArena through BrowserGym against the self-hosted sites named by the WA_* variables",
    extra=EXTRA,
    # no acquisition profile of its own: no gold paths to perturb (acquisition needs the oracle)
    follower="dreamer_gym.agents.miniwob_following:MiniWoBFollowing",  # reads the same web action language
    agent_prompt="agent_system_web",
    idle_action='press "Tab"',
    warm_actions=("look",),
    check_available=check_available,
    agent_max_steps=30,
    has_gold_paths=False,
)
