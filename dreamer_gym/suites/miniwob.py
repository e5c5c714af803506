"""MiniWoB++ through BrowserGym on Debian's Chromium, offline, spoken to in a small text action language.

- The pages are the ``miniwob`` wheel's own html (``file://``); the browser is Debian's ``chromium``
  (``make setup`` installs it), launched by playwright 1.44 through a wrapper script (playwright cannot
  download its own build here; see :func:`~dreamer_gym.suites.web.chromium.chromium_wrapper`).
- Families are MiniWoB++ tasks a script can read and solve (:data:`FAMILIES`). A variation is the integer
  seed BrowserGym's task takes: the same seed gives the same page as ``gym.make("browsergym/miniwob.<family>")``
  reset with that seed. Splits are disjoint seed ranges (:data:`SPLIT_RANGES`).
- Actions are text, in the semantic language of :mod:`dreamer_gym.suites.web` (``click "Submit"``,
  ``type "Bob" into "Username"``, ``check "JE4O"``, ``select "Drona" in "Country"``, ``focus "Username"``,
  ``press "Enter"``; raw BrowserGym actions such as ``click('12')`` pass through). The web verbs
  (``answer``, ``goto``, ``go back``, ``scroll``) are WebArena's and are refused here.

The browser, page reading, action language and warm env are shared with the WebArena suite and live in
:mod:`dreamer_gym.suites.web`. MiniWoB pages keep no storage and every navigation reloads the document, so
one context and page serve every episode (``fresh_context=False``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dreamer_gym.errors import SuiteError
from dreamer_gym.suites.base import EpisodeTask
from dreamer_gym.suites.spec import AcquisitionProfile, OracleProcedure, SuiteSpec
from dreamer_gym.suites.web import DEFAULT_CHROMIUM, BrowserGymSuite, Page, find_spec, norm, pip_hint, quote

SUITE_NAME = "miniwob"
FAMILIES: tuple[str, ...] = (
    "click-button",
    "click-checkboxes",
    "click-dialog",
    "click-link",
    "click-option",
    "click-tab",
    "choose-list",
    "enter-password",
    "enter-text",
    "focus-text",
    "login-user",
)
SPLIT_RANGES: dict[str, range] = {"train": range(0, 1000), "dev": range(1000, 1100), "test": range(2000, 2100)}


def miniwob_html_url() -> str:
    """``file://`` URL of the ``miniwob`` wheel's ``html/miniwob/`` folder, with the trailing slash."""
    spec = find_spec("miniwob")
    folder = Path(spec.origin).parent / "html" / "miniwob"
    if not folder.is_dir():
        raise SuiteError(f"The miniwob wheel has no html folder at {folder}; reinstall it: {pip_hint()}")
    return folder.as_uri() + "/"


# --- gold paths: scripted solutions read from the goal and the page ----------------------------------------
_GOALS: dict[str, re.Pattern[str]] = {
    "click-button": re.compile(r'^Click on the "(?P<x>.+)" button\.$'),
    "click-checkboxes": re.compile(r"^Select (?P<x>.+) and click Submit\.$"),
    "click-dialog": re.compile(r'^Close the dialog box by clicking the "x"\.$'),
    "click-link": re.compile(r'^Click on the link "(?P<x>.+)"\.$'),
    "click-option": re.compile(r"^Select (?P<x>.+) and click Submit\.$"),
    "click-tab": re.compile(r"^Click on (?P<x>Tab #\d+)\.$"),
    "choose-list": re.compile(r"^Select (?P<x>.+) from the list and click Submit\.$"),
    "enter-password": re.compile(r'^Enter the password "(?P<x>.*)" into both text fields and press submit\.$'),
    "enter-text": re.compile(r'^Enter "(?P<x>.*)" into the text field and press Submit\.$'),
    "focus-text": re.compile(r"^Focus into the textbox\.$"),
    "login-user": re.compile(
        r'^Enter the username "(?P<x>.*)" and the password "(?P<y>.*)" into the text fields and press login\.$'
    ),
}


def solve(family: str, goal: str, page: Page) -> tuple[str, ...]:
    """The scripted solution of a ``family`` task in the action language, from its goal and first page."""
    m = _GOALS[family].match(norm(goal))
    if m is None:
        raise SuiteError(f"Unexpected {family} goal {goal!r}: the scripted solution cannot read it")
    x = m.groupdict().get("x") or ""
    if family in ("click-button", "click-link", "click-tab"):
        return (f"click {quote(x)}",)
    if family == "click-dialog":
        close = next((e for e in page.elements if e.role == "button"), None)
        if close is None:
            raise SuiteError("click-dialog: the page has no close button")
        return (f"click {quote(close.name)}",)
    if family == "click-checkboxes":
        names = [] if x == "nothing" else x.split(", ")
        return (*(f"check {quote(n)}" for n in names), 'click "Submit"')
    if family == "click-option":
        return (f"check {quote(x)}", 'click "Submit"')
    if family == "choose-list":
        return (f"select {quote(x)}", 'click "Submit"')
    if family == "enter-text":
        return (f"type {quote(x)} into textbox 1", 'click "Submit"')
    if family == "enter-password":
        return (f'type {quote(x)} into "Password"', f'type {quote(x)} into "Verify password"', 'click "Submit"')
    if family == "focus-text":
        return ("focus textbox 1",)
    if family == "login-user":
        y = m.group("y")
        return (f'type {quote(x)} into "Username"', f'type {quote(y)} into "Password"', 'click "Login"')
    raise SuiteError(f"No scripted solution for {family!r}")  # pragma: no cover - FAMILIES and _GOALS agree


def _task_classes() -> dict[str, type]:
    try:
        import browsergym.miniwob
    except ImportError as exc:  # pragma: no cover - depends on the install
        import gymnasium

        raise gymnasium.error.DependencyNotInstalled(
            f"BrowserGym MiniWoB is not installed ({exc}): run {pip_hint()}"
        ) from exc
    return {cls.subdomain: cls for cls in browsergym.miniwob.ALL_MINIWOB_TASKS}


# --- the suite ---------------------------------------------------------------------------------------------
class MiniWoBSuite(BrowserGymSuite):
    """A :class:`~dreamer_gym.suites.base.TaskSuite` over MiniWoB++ pages in one warm headless Chromium.

    Scores are 100.0 when BrowserGym's reward is positive (MiniWoB's raw reward > 0), else 0.0; an episode
    ends when MiniWoB ends it (any submit, right or wrong) or after ``step_limit`` actions (bad ones count).
    Constructing a suite checks that Chromium is installed and starts nothing; the browser starts on the
    first :meth:`start` and stays up until :meth:`close`.
    """

    name = SUITE_NAME
    label = "MiniWoB"
    families: tuple[str, ...] = FAMILIES

    def __init__(
        self,
        step_limit: int = 10,
        chromium: str | os.PathLike[str] = DEFAULT_CHROMIUM,
        cache_dir: str | os.PathLike[str] | None = None,
        miniwob_url: str | None = None,
        lean_stacks: bool = True,
    ) -> None:
        super().__init__(step_limit, chromium, cache_dir, lean_stacks)
        self._miniwob_url = miniwob_url
        self._url = ""
        self._gold: dict[EpisodeTask, tuple[str, ...]] = {}
        self._classes: dict[str, type] = {}

    # --- families and splits ------------------------------------------------------------------------------
    def variations(self, family: str, split: str) -> tuple[int, ...]:
        self._check(family, split)
        return tuple(SPLIT_RANGES[split])

    def _task_entry(self, task: EpisodeTask) -> tuple[type, dict[str, object]]:
        if not self._classes:
            self._classes = _task_classes()
            self._url = self._miniwob_url or os.environ.get("MINIWOB_URL") or miniwob_html_url()
            os.environ.setdefault("MINIWOB_URL", self._url)
        return self._classes[task.family], {"base_url": self._url}

    # --- the oracle ----------------------------------------------------------------------------------------
    def gold_path(self, task: EpisodeTask) -> tuple[str, ...]:
        """The scripted solution of ``task`` in the action language, read from its goal and first page.

        The page must be seen: unless ``task`` is the episode in progress with no step taken yet, this
        *starts* ``task`` (ending the current episode); call :meth:`start` before playing. Cached per task.
        """
        self._check(task.family)
        if task not in self._gold:
            if not (self._task == task and self._steps == 0 and self._page is not None):
                self.start(task)
            self._gold[task] = solve(task.family, self._description, self._page)  # type: ignore[arg-type]
        return self._gold[task]


# --- acquisition: how the noisy expert strays here ---------------------------------------------------------
def _detour(rng: Any, gold: Sequence[str]) -> list[str]:
    return ['press "Tab"'] if rng.random() < 0.5 else ["focus textbox 1"]


def _wrong(rng: Any, gold: Sequence[str]) -> str:
    return 'click "Submit"' if rng.random() < 0.5 else "click button 1"  # may submit too early: a failed episode


def _goal(description: str) -> str:
    """The whole goal sentence (goals quote values that may hold a period)."""
    return description.strip().rstrip(".").strip()


PROFILE = AcquisitionProfile(  # MiniWoB pages have no places to remember: no location or picked patterns
    detour=_detour, wrong=_wrong,
    never_skip=tuple(f"{v} " for v in ("click", "type", "check", "uncheck", "select", "focus")),
    failed=("Unknown action", "No known action matches"),
    goal=_goal,
)

# --- the oracle: (goal template, steps) per task in the suite's action language; a goal's <slots> are what a
# task's goal says in their place ("check each of <items>" repeats for every item of a list).
PROCEDURES: dict[str, OracleProcedure] = {
    "click-button": OracleProcedure('click "<name>"', 'Click on the "<name>" button'),
    "click-checkboxes": OracleProcedure('check each of <items>, click "Submit"', "Select <items> and click Submit"),
    "click-dialog": OracleProcedure("click button 1", 'Close the dialog box by clicking the "x"'),
    "click-link": OracleProcedure('click "<text>"', 'Click on the link "<text>"'),
    "click-option": OracleProcedure('check "<option>", click "Submit"', "Select <option> and click Submit"),
    "click-tab": OracleProcedure('click "<tab>"', "Click on <tab>"),
    "choose-list": OracleProcedure('select "<item>", click "Submit"', "Select <item> from the list and click Submit"),
    "enter-password": OracleProcedure(
        'type "<password>" into "Password", type "<password>" into "Verify password", click "Submit"',
        'Enter the password "<password>" into both text fields and press submit'),
    "enter-text": OracleProcedure('type "<text>" into textbox 1, click "Submit"',
                                  'Enter "<text>" into the text field and press Submit'),
    "focus-text": OracleProcedure("focus textbox 1", "Focus into the textbox"),
    "login-user": OracleProcedure(
        'type "<username>" into "Username", type "<password>" into "Password", click "Login"',
        'Enter the username "<username>" and the password "<password>" into the text fields and press login'),
}


def check_available() -> None:
    """MiniWoB needs Debian's Chromium (``make setup``) and the web extra; names the fix when missing."""
    from dreamer_gym.suites.web.chromium import check_chromium

    check_chromium()
    find_spec("miniwob")  # raises DependencyNotInstalled naming the extra


SPEC = SuiteSpec(
    name=SUITE_NAME,
    adapter="dreamer_gym.suites.miniwob:MiniWoBSuite",
    families=FAMILIES,
    description="MiniWoB++ pages (the miniwob wheel) through BrowserGym in Debian's headless Chromium, offline",
    extra="web",
    requires=("browsergym.core", "browsergym.miniwob", "miniwob"),
    profile=PROFILE,
    follower="dreamer_gym.agents.miniwob_following:MiniWoBFollowing",
    agent_prompt="agent_system_web",
    idle_action='press "Tab"',
    look_action="look",
    warm_actions=("look", "inventory"),
    procedures=PROCEDURES,
    check_available=check_available,
    agent_max_steps=10,  # MiniWoB's tasks take 1-5 actions
    # one line each (~24 tokens); with 6, other families' raw "Select ... and click Submit" entries crowded a
    # consolidated click-option procedure out of the agent's context
    agent_top_k=10,
)
