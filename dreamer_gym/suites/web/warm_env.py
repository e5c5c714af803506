"""One warm headless browser for BrowserGym tasks (:func:`warm_env_class`), and the scoped speed-up of
playwright's call wrappers (:func:`lean_playwright_stacks`).

Why not stock ``BrowserEnv``? Its ``reset`` closes and relaunches two browsers (the page's and a chat
panel's) every episode (~1.5-2.6 s here), and every step waits ``pre_observation_delay`` (0.5 s),
replays actions with the task's ``slow_mo`` and takes a screenshot. The warm env keeps one headless
browser for the suite's life (and, unless ``fresh_context``, one context and page, navigated to the next
task); it has no chat browser (chat messages stay in-process), no delays and no screenshot. The task
code, observation extraction and step pipeline are BrowserGym's own.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dreamer_gym.errors import SuiteError

logger = logging.getLogger(__name__)


class _LeanInspect:
    """The ``inspect`` module as playwright 1.44's call wrappers see it inside :func:`lean_playwright_stacks`:
    ``stack()`` walks the frames without reading source files (the only fields playwright reads are the
    frame, file name, line and function)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(inspect, name)

    @staticmethod
    def stack(context: int = 1) -> list[inspect.FrameInfo]:
        frame, out = sys._getframe(1), []
        while frame is not None:
            code = frame.f_code
            out.append(inspect.FrameInfo(frame, code.co_filename, frame.f_lineno, code.co_name, None, None))
            frame = frame.f_back
        return out


_LEAN_INSPECT = _LeanInspect()


@contextmanager
def lean_playwright_stacks() -> Iterator[None]:
    """While inside, playwright's sync API records the caller's stack (twice per call, for its error
    messages) without ``inspect.stack()``'s source lookups, which cost ~1-10 ms a call, a quarter of a
    MiniWoB step here. Scoped and undone on exit: playwright calls made elsewhere are untouched."""
    from playwright._impl import _connection, _sync_base

    saved = (_connection.inspect, _sync_base.inspect)
    _connection.inspect = _sync_base.inspect = _LEAN_INSPECT  # type: ignore[assignment]
    try:
        yield
    finally:
        _connection.inspect, _sync_base.inspect = saved


_PAGE_ACTIVATED_JS = """
window.browsergym_page_activated();
for (const ev of ["focus", "focusin", "load", "pageshow", "mousemove", "mouseup", "mousedown", "wheel", "keyup",
                  "keydown", "input", "touchstart", "touchend"]) {
  window.addEventListener(ev, () => {window.browsergym_page_activated();}, {capture: true});
}
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") { window.browsergym_page_activated(); }
}, {capture: true});
"""
_TRANSIENT = (
    "Frame was detached", "Frame with the given frameId is not found", "Execution context was destroyed",
    "Frame has been detached", "Cannot mark a child frame without a bid", "Cannot read properties of undefined",
)  # fmt: skip


class _TextChat:
    """BrowserGym's chat without its browser: the messages, kept in this process."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def add_message(self, role: str, msg: str) -> None:
        if role in ("user", "user_image", "assistant", "infeasible"):
            self.messages.append({"role": role, "timestamp": time.time(), "message": msg})

    def wait_for_user_message(self) -> None:
        raise SuiteError("a BrowserGym suite of dreamer_gym has no chat panel to wait on")

    def close(self) -> None:
        self.messages = []


@functools.cache
def warm_env_class() -> type:
    """The warm BrowserGym env class, built (once) on first use so that importing this module imports no
    browser code."""
    import browsergym.core as bg_core
    import numpy as np
    import playwright.sync_api
    from browsergym.core.action.highlevel import HighLevelActionSet
    from browsergym.core.constants import BROWSERGYM_ID_ATTRIBUTE, EXTRACT_OBS_MAX_TRIES
    from browsergym.core.env import BrowserEnv
    from browsergym.core.observation import (
        MarkingError,
        _post_extract,
        _pre_extract,
        extract_dom_extra_properties,
        extract_dom_snapshot,
        extract_focused_element_bid,
        extract_merged_axtree,
    )

    class _WarmBrowserEnv(BrowserEnv):
        """A BrowserGym env whose ``reset`` keeps one browser, context and page and navigates to the new
        task; no chat browser, no screenshot, no pre-observation delay, ``slow_mo=0``. Set
        :attr:`task_entrypoint` and :attr:`task_kwargs` to switch task between resets. With
        ``fresh_context`` every reset gets a new context (no cookies or storage from the last task, as in
        stock BrowserGym) in the same browser."""

        def __init__(
            self, task_entrypoint: type, task_kwargs: dict[str, Any], executable: Path, fresh_context: bool = False
        ) -> None:
            super().__init__(
                task_entrypoint=task_entrypoint,
                task_kwargs=task_kwargs,
                headless=True,
                pre_observation_delay=0.0,
                action_mapping=HighLevelActionSet(
                    subsets=["chat", "infeas", "bid", "coord", "nav", "tab"]
                ).to_python_code,
            )
            self.executable = executable
            self.fresh_context = fresh_context
            self.owns_playwright = False

        def _launch(self) -> None:
            self.owns_playwright = bg_core._PLAYWRIGHT is None
            pw = bg_core._get_global_playwright()
            pw.selectors.set_test_id_attribute(BROWSERGYM_ID_ATTRIBUTE)
            self.browser = pw.chromium.launch(
                executable_path=str(self.executable),
                headless=True,
                slow_mo=0,
                args=["--disable-features=OverlayScrollbars,ExtendedOverlayScrollbars"],
                ignore_default_args=["--hide-scrollbars"],
            )
            self.context = None

        def _new_context(self, task: Any) -> None:
            self.context = self.browser.new_context(
                viewport=task.viewport,
                locale=getattr(task, "locale", None),
                timezone_id=getattr(task, "timezone_id", None),
            )
            self.context.expose_binding(
                "browsergym_page_activated", lambda source: self._activate_page_from_js(source["page"])
            )
            self.context.add_init_script(_PAGE_ACTIVATED_JS)
            self.page = None

        def reset(
            self, seed: int | None = None, options: dict[str, Any] | None = None
        ) -> tuple[dict[str, Any], dict[str, Any]]:
            if self.task is not None:
                self.task.teardown()
                self.task = None
            task = self.task_entrypoint(seed=seed, **self.task_kwargs)
            self.task = task
            if self.browser is None or not self.browser.is_connected():
                self._launch()
            if self.fresh_context and self.context is not None:
                try:
                    self.context.close()
                except playwright.sync_api.Error as exc:  # already gone with its pages: a new one follows
                    logger.debug("closing %s: %s", self.context, exc)
                self.context = None
            if self.context is None:
                self._new_context(task)
            self.context.set_default_timeout(task.timeout)
            if self.page is None or self.page.is_closed():
                self.page = self.context.new_page()
            for other in self.context.pages:  # tabs a raw action opened
                if other != self.page:
                    other.close()
            self.page_history = {self.page: None}
            if self.page.viewport_size != task.viewport:
                self.page.set_viewport_size(task.viewport)
            goal, task_info = task.setup(page=self.page)
            self.goal_object = [{"type": "text", "text": goal}] if isinstance(goal, str) else list(goal or [])
            self.chat = _TextChat()
            self.chat.add_message("assistant", "Hi! I am your UI assistant, I can perform web tasks for you.")
            for message in self.goal_object:
                if message["type"] == "text":
                    self.chat.add_message("user", message["text"])
            self._wait_dom_loaded()
            self._active_page_check()
            self.start_time = time.time()
            self.last_action, self.last_action_error = "", ""
            self.infeasible_message_received = False
            return self._get_obs(), {"task_info": task_info}

        def _get_obs(self) -> dict[str, Any]:
            """BrowserGym's observation without the screenshot (this suite reads text only)."""
            for retries_left in reversed(range(EXTRACT_OBS_MAX_TRIES)):
                try:
                    _pre_extract(self.page, tags_to_mark=self.tags_to_mark, lenient=(retries_left == 0))
                    dom = extract_dom_snapshot(self.page)
                    axtree = extract_merged_axtree(self.page)
                    focused = extract_focused_element_bid(self.page)
                    extra = extract_dom_extra_properties(
                        dom, scale_factor=getattr(self.page, "_bgym_scale_factor", 1.0)
                    )
                except (playwright.sync_api.Error, MarkingError) as exc:
                    if retries_left > 0 and any(s in str(exc) for s in _TRANSIENT):
                        _post_extract(self.page)
                        time.sleep(0.1)
                        continue
                    raise
                break
            _post_extract(self.page)
            return {
                "chat_messages": tuple(dict(m) for m in self.chat.messages),
                "goal": "\n".join(m["text"] for m in self.goal_object if m["type"] == "text"),
                "goal_object": tuple(self.goal_object),
                "open_pages_urls": tuple(p.url for p in self.context.pages),
                "active_page_index": np.asarray([self.context.pages.index(self.page)]),
                "url": self.page.url,
                "screenshot": np.zeros((0, 0, 3), dtype=np.uint8),
                "dom_object": dom,
                "axtree_object": axtree,
                "extra_element_properties": extra,
                "focused_element_bid": focused,
                "last_action": self.last_action,
                "last_action_error": self.last_action_error,
                "elapsed_time": np.asarray([time.time() - self.start_time]),
            }

        def close(self) -> None:
            """Close the page, context and browser, and stop playwright's driver if this env started it."""
            task, self.task = self.task, None
            try:
                if task is not None:
                    task.teardown()
                for closer in (self.context, self.browser):
                    if closer is not None:
                        try:
                            closer.close()
                        except playwright.sync_api.Error as exc:  # already gone: nothing to close
                            logger.debug("closing %s: %s", closer, exc)
            finally:
                self.page, self.context, self.browser, self.chat = None, None, None, None
                if self.owns_playwright and bg_core._PLAYWRIGHT is not None:
                    pw = bg_core._PLAYWRIGHT
                    bg_core._set_global_playwright(None)
                    pw.stop()
                self.owns_playwright = False

    return _WarmBrowserEnv
