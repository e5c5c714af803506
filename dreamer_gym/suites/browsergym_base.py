"""What the BrowserGym suites share: Debian's Chromium for playwright, the page as text, the semantic
action language, one warm browser, and the suite lifecycle (:class:`BrowserGymSuite`).

- The browser is Debian's ``chromium`` (``make setup`` installs it), launched by playwright 1.44 through a
  wrapper script this module writes (playwright cannot download its own build here; see
  :func:`chromium_wrapper`).
- Actions are text. BrowserGym's element ids (bids) change from page to page, so the suites also accept a
  semantic language over the accessibility tree that a procedure can reuse across pages::

      click "Submit"                    an element by its visible name or text
      click button 2                    ... or by its role and position (1-based, page order)
      type "Bob" into "Username"        fill a text box found by label/placeholder (or `textbox 1`)
      type "Bob"                        ... the focused text box, else the first one
      check "JE4O" / uncheck "JE4O"     a checkbox or radio button by its label
      select "Drona" in "Country"       an option of a drop-down list (``select "Drona"``: the list holding it)
      focus "Username"                  focus an element
      press "Enter"                     a key, on the focused element

  Suites that browse real sites (WebArena) add :data:`WEB_VERBS`::

      answer "42"                       reply to the user (BrowserGym's ``send_msg_to_user``; ends a WebArena task)
      goto "http://host/page"           open a URL in the current tab
      go back / go forward              browser history
      scroll down / scroll up           scroll the page by one screen

  Raw BrowserGym high-level actions (``click('12')``, ``fill('14', 'x')``) pass through unchanged. An
  action that does not parse, uses a verb the suite does not speak, or names no element on the page is
  answered with an observation that says why and lists the accepted forms; it never raises.

Why not stock ``BrowserEnv``? Its ``reset`` closes and relaunches two browsers (the page's and a chat
panel's) every episode (~1.5-2.6 s here), and every step waits ``pre_observation_delay`` (0.5 s),
replays actions with the task's ``slow_mo`` and takes a screenshot. :class:`WarmBrowserEnv` keeps one
headless browser for the suite's life (and, unless ``fresh_context``, one context and page, navigated to
the next task); it has no chat browser (chat messages stay in-process), no delays and no screenshot. The
task code, observation extraction and step pipeline are BrowserGym's own.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from dreamer_gym.errors import SuiteError
from dreamer_gym.paths import cache_root
from dreamer_gym.suites.base import SPLITS, EpisodeTask, StepOutcome

logger = logging.getLogger(__name__)

DEFAULT_CHROMIUM = "/usr/lib/chromium/chromium"
CHROMIUM_FLAGS = (
    "--no-sandbox --disable-gpu --disable-quic --disable-sync --no-first-run --disable-background-networking "
    "--disable-component-update"
)
BASE_VERBS = frozenset({"click", "check", "uncheck", "type", "select", "focus", "press"})
WEB_VERBS = frozenset({"answer", "goto", "back", "forward", "scroll"})
ACTION_FORMS = (
    'click "NAME" | click ROLE N | type "TEXT" into "FIELD" | type "TEXT" into textbox N | type "TEXT" | '
    'check "LABEL" | uncheck "LABEL" | select "OPTION" in "LIST" | select "OPTION" | focus "NAME" | '
    "press \"KEY\" | a raw BrowserGym action such as click('12') or fill('14', 'text')"
)
WEB_ACTION_FORMS = ACTION_FORMS.replace(
    " | a raw BrowserGym",
    ' | answer "TEXT" | goto "URL" | go back | go forward | scroll down | scroll up | a raw BrowserGym',
)
SCROLL_PIXELS = 600  # `scroll down` / `scroll up`: about one screen of a 720-pixel viewport
INSTALL_HINT = (
    "run `make setup` (it installs the Debian packages `chromium` and `chromium-driver` with apt: "
    "`apt-get install --no-install-recommends chromium chromium-driver`)"
)
_INSTALL_HINT = INSTALL_HINT  # the name miniwob.py used before the split


def default_cache_dir(suite: str) -> Path:
    """``<cache_root()>/<suite>`` (default ``~/.cache/dreamer_gym/<suite>``; see :func:`dreamer_gym.paths.cache_root`)."""
    return cache_root() / suite


def check_chromium(chromium: str | os.PathLike[str] = DEFAULT_CHROMIUM) -> Path:
    """``chromium`` as a path, or :class:`SuiteError` naming the install command when it is not an
    executable file. Cheap: starts nothing."""
    path = Path(chromium)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise SuiteError(f"Chromium is not installed (no executable {path}): {INSTALL_HINT}")
    return path


def playwright_chromium_revision() -> str:
    """The Chromium build playwright expects (``browsers.json`` of its driver), e.g. ``"1117"`` for 1.44."""
    spec = _find_spec("playwright")
    browsers = Path(spec.origin).parent / "driver" / "package" / "browsers.json"
    for browser in json.loads(browsers.read_text())["browsers"]:
        if browser["name"] == "chromium":
            return str(browser["revision"])
    raise SuiteError(f"{browsers} names no chromium build")


def chromium_wrapper(cache_dir: Path, chromium: str | os.PathLike[str] = DEFAULT_CHROMIUM) -> Path:
    """Write (once) ``<cache_dir>/playwright/chromium-<rev>/chrome-linux/chrome``: a script that execs
    ``chromium`` with the flags this machine needs, where playwright looks for its own build when
    ``PLAYWRIGHT_BROWSERS_PATH=<cache_dir>/playwright``. Returns the script's path."""
    chromium = check_chromium(chromium)
    script = cache_dir / "playwright" / f"chromium-{playwright_chromium_revision()}" / "chrome-linux" / "chrome"
    text = f'#!/bin/sh\nexec {_sh_quote(str(chromium))} {CHROMIUM_FLAGS} "$@"\n'
    if not script.is_file() or script.read_text() != text:
        script.parent.mkdir(parents=True, exist_ok=True)
        tmp = script.with_name(f".chrome.{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.chmod(0o755)
        tmp.replace(script)
    return script


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _pip_hint(extra: str = "web") -> str:
    return f'pip install "dreamer-gym[{extra}]"'


def _find_spec(module: str, extra: str = "web") -> Any:
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        import gymnasium

        raise gymnasium.error.DependencyNotInstalled(f"{module} is not installed: run {_pip_hint(extra)}")
    return spec


# --- the page, read from BrowserGym's accessibility tree ---------------------------------------------------
INTERACTIVE_ROLES = (
    "button", "link", "checkbox", "radio", "textbox", "searchbox", "combobox", "listbox", "option", "tab",
    "menuitem", "menuitemcheckbox", "menuitemradio", "switch", "slider", "spinbutton", "treeitem",
)  # fmt: skip
_CLICK_RANK = {role: rank for rank, role in enumerate(INTERACTIVE_ROLES)}
_TEXT_ROLES = ("textbox", "searchbox", "spinbutton")
_CHECK_ROLES = ("checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio")
_LIST_ROLES = ("combobox", "listbox")
_SKIP_ROLES = ("InlineTextBox", "LineBreak")


@dataclass(frozen=True)
class Element:
    """One element an action can name: a BrowserGym bid with its role, name and state."""

    bid: str
    role: str  # an ARIA role, or "clickable" for a plain element with a click handler and some text
    name: str  # accessible name; else label/placeholder (text boxes) or its text
    index: int  # 1-based position among the rendered elements of the same role, in page order
    order: int
    rendered: bool
    value: str | None = None
    checked: str | None = None  # "true" / "false" / "mixed"
    selected: bool | None = None
    focused: bool = False
    owner: str | None = None  # options: the bid of their list
    shown: bool = True  # False: not listed in the observation (e.g. the link inside a tab of the same name)

    def describe(self) -> str:
        ref = (
            f"{self.role} {self.index} {quote(self.name)}"
            if self.role in _TEXT_ROLES
            else f"{self.role} {quote(self.name)}"
        )
        states = []
        if self.checked is not None:
            states.append("checked" if self.checked == "true" else "unchecked")
        if self.selected:
            states.append("selected")
        if self.value is not None and self.role not in ("option",):
            states.append(f"value={quote(self.value)}")
        if self.focused:
            states.append("focused")
        return f"[{self.bid}] {ref}" + (" " + " ".join(states) if states else "")


@dataclass(frozen=True)
class Page:
    title: str
    elements: tuple[Element, ...]
    text: str  # the compact rendering (the observation)
    focused_bid: str | None

    def focused(self) -> Element | None:
        return next((e for e in self.elements if e.focused or e.bid == self.focused_bid), None)


def _norm(text: Any) -> str:
    return re.sub(r"\s+", " ", str(text or "").replace("\xa0", " ")).strip()


def read_page(obs: dict[str, Any]) -> Page:
    """The elements and a compact text rendering of a BrowserGym observation (AXTree + extra properties)."""
    nodes = obs["axtree_object"]["nodes"]
    extra = obs.get("extra_element_properties") or {}
    focused_bid = obs.get("focused_element_bid") or None
    by_id = {n["nodeId"]: n for n in nodes}
    root = next((n for n in nodes if not n.get("parentId")), nodes[0]) if nodes else None
    text_of: dict[str, str] = {}

    def subtree_text(node: dict[str, Any]) -> str:
        key = node["nodeId"]
        if key not in text_of:
            if node["role"]["value"] == "StaticText":
                text_of[key] = _norm(node.get("name", {}).get("value"))
            else:
                parts = (subtree_text(by_id[c]) for c in node.get("childIds", ()) if c in by_id)
                text_of[key] = _norm(" ".join(p for p in parts if p))
        return text_of[key]

    def has_interactive(node: dict[str, Any]) -> bool:
        for c in node.get("childIds", ()):
            child = by_id.get(c)
            if child is not None and (child["role"]["value"] in INTERACTIVE_ROLES or has_interactive(child)):
                return True
        return False

    elements: list[Element] = []
    lines: list[str] = []
    counts: dict[str, int] = {}
    state = {"label": "", "last_name": None}

    def visit(node: dict[str, Any], depth: int, owner: str | None, inside: tuple[str, ...], hush: bool) -> None:
        role = node["role"]["value"]
        if role in _SKIP_ROLES:
            return
        name = _norm(node.get("name", {}).get("value"))
        bid = node.get("browsergym_id")
        props = {p["name"]: p.get("value", {}).get("value") for p in node.get("properties", ())}
        child_depth, child_owner, child_inside, child_hush = depth, owner, inside, hush
        if node.get("ignored"):
            pass
        elif role == "StaticText":
            if name and not hush and name != state["last_name"]:
                lines.append("  " * depth + f"text {quote(name)}")
            if name:
                state["label"] = name
            state["last_name"] = None
        elif bid is not None and (
            role in INTERACTIVE_ROLES or _clickable_text(node, extra, bid, subtree_text, has_interactive)
        ):
            info = extra.get(bid, {})
            rendered = info.get("bbox") is not None
            shown_role = role if role in INTERACTIVE_ROLES else "clickable"
            label = name
            if not label and shown_role in (*_TEXT_ROLES, *_LIST_ROLES):
                label = _norm(props.get("placeholder"))
                if not label and state["label"]:  # the text just before it (a <label> without `for`)
                    label = state["label"].rstrip(":").strip()
                    if lines and lines[-1].endswith(f"text {quote(state['label'])}"):
                        lines.pop()  # shown as the text box's name instead
            if not label and shown_role not in _LIST_ROLES:  # a list's text is its options
                label = subtree_text(node)
            value = node.get("value", {}).get("value")
            if shown_role in _TEXT_ROLES or shown_role == "combobox":
                value = "" if value is None else str(value)
            else:
                value = None
            if rendered or shown_role == "option":
                counts[shown_role] = counts.get(shown_role, 0) + 1
            element = Element(
                bid=str(bid), role=shown_role, name=label, index=counts.get(shown_role, 0), order=len(elements),
                rendered=rendered, value=value,
                checked=str(props["checked"]) if "checked" in props and shown_role in _CHECK_ROLES else None,
                selected=bool(props["selected"]) if "selected" in props else None,
                focused=bool(props.get("focused")) or str(bid) == focused_bid,
                owner=owner if shown_role == "option" else None,
                shown=(rendered or shown_role == "option") and label not in inside,
            )  # fmt: skip
            elements.append(element)
            if element.shown:
                lines.append("  " * depth + element.describe())
                child_depth = depth + 1
            child_inside = (*inside, label)
            child_hush = True  # the element's own text is its name
            if shown_role in _LIST_ROLES:
                child_owner = str(bid)
            state["label"], state["last_name"] = "", label
        for c in node.get("childIds", ()):
            if c in by_id:
                visit(by_id[c], child_depth, child_owner, child_inside, child_hush)

    title = ""
    if root is not None:
        title = _norm(root.get("name", {}).get("value"))
        visit(root, 0, None, (), False)
    body = "\n".join(lines) if lines else "(the page shows nothing)"
    return Page(title, tuple(elements), f"page: {title}\n{body}", str(focused_bid) if focused_bid else None)


def _clickable_text(
    node: dict[str, Any], extra: dict[str, Any], bid: str, subtree_text: Any, has_interactive: Any
) -> bool:
    """A plain element (span, div, ...) with a click handler, some text and no control inside (MiniWoB links)."""
    return bool(extra.get(bid, {}).get("clickable")) and bool(subtree_text(node)) and not has_interactive(node)


# --- the action language ------------------------------------------------------------------------------------
_Q = r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\''
_TARGET = rf"(?:{_Q}|(?P<role>[a-z]+)\s+(?P<n>\d+))"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (verb, re.compile(pattern, re.IGNORECASE | re.DOTALL))
    for verb, pattern in (
        ("click", rf"^click\s+{_TARGET}$"),
        ("check", rf"^check\s+{_TARGET}$"),
        ("uncheck", rf"^uncheck\s+{_TARGET}$"),
        ("type", rf"^type\s+(?:{_Q})(?:\s+into\s+{_TARGET})?$"),
        ("select", rf"^select\s+(?:{_Q})(?:\s+(?:in|from)\s+{_TARGET})?$"),
        ("focus", rf"^focus\s+{_TARGET}$"),
        ("press", rf"^press\s+(?:{_Q})$"),
        ("answer", rf"^answer\s+(?:{_Q})$"),
        ("goto", rf"^go\s*to\s+(?:{_Q})$"),
        ("back", r"^go\s+back$"),
        ("forward", r"^go\s+forward$"),
        ("scroll", r"^scroll\s+(up|down)$"),
    )
)
_RAW = re.compile(r"^\s*([a-z_]+)\s*\(.*\)\s*$", re.DOTALL)
_ROLE_ALIASES = {"field": "textbox", "input": "textbox", "text": "textbox", "list": "combobox", "dropdown": "combobox"}


@dataclass(frozen=True)
class Target:
    name: str | None = None
    role: str | None = None
    index: int | None = None

    def __str__(self) -> str:
        return quote(self.name) if self.name is not None else f"{self.role} {self.index}"


@dataclass(frozen=True)
class Command:
    verb: str
    target: Target | None = None
    text: str | None = None  # what to type / the option / the key / the answer / the URL / up or down


def quote(text: str) -> str:
    """``text`` as a double-quoted string of the action language (backslash escapes)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse_command(action: str) -> Command | None:
    """A semantic action, or None when ``action`` is not one (raw BrowserGym actions are not). Every verb
    of the language parses here; a suite refuses the verbs it does not speak (:attr:`BrowserGymSuite.verbs`)."""
    action = action.strip()
    for verb, pattern in _PATTERNS:
        m = pattern.match(action)
        if m is None:
            continue
        if verb in ("back", "forward"):
            return Command(verb)
        if verb == "scroll":
            return Command(verb, text=m.group(1).lower())
        groups = m.groups()
        quoted = [_unescape(g) for g in groups[:2] if g is not None]
        first = quoted[0] if quoted else None
        if verb in ("click", "check", "uncheck", "focus"):
            return Command(verb, _target(m, groups, 0))
        if verb in ("press", "answer", "goto"):
            return Command(verb, text=first)
        has_target = any(g is not None for g in groups[2:])
        return Command(verb, _target(m, groups, 2) if has_target else None, first)
    return None


def _target(m: re.Match[str], groups: tuple[str | None, ...], at: int) -> Target:
    if groups[at] is not None or groups[at + 1] is not None:
        return Target(name=_unescape(groups[at] if groups[at] is not None else groups[at + 1] or ""))
    role = (m.group("role") or "").lower()
    return Target(role=_ROLE_ALIASES.get(role, role), index=int(m.group("n")))


def _fold(text: str) -> str:
    return text.casefold().rstrip(":").strip()


def find(page: Page, target: Target, roles: tuple[str, ...] | None = None) -> tuple[Element | None, str]:
    """The element ``target`` names (best match first: exact name, then case-insensitive, then a unique
    substring; rendered before hidden; controls before plain text; page order), or None and why not."""
    pool = [e for e in page.elements if roles is None or e.role in roles]
    if target.name is None:
        hits = [
            e for e in pool if e.role == target.role and e.index == target.index and (e.rendered or e.role == "option")
        ]
        if hits:
            return hits[0], ""
        count = sum(1 for e in pool if e.role == target.role and e.rendered)
        return None, f"there is no {target.role} {target.index} on the page ({count} {target.role} element(s))"
    want = _norm(target.name)
    ranked: list[tuple[int, int, int, int, Element]] = []
    for e in pool:
        if e.name == want:
            tier = 0
        elif _fold(e.name) == _fold(want):
            tier = 1
        else:
            continue
        ranked.append((tier, 0 if e.rendered else 1, _CLICK_RANK.get(e.role, len(_CLICK_RANK)), e.order, e))
    if not ranked and want:
        subs = [e for e in pool if _fold(want) in _fold(e.name) and e.rendered]
        if len(subs) == 1:
            return subs[0], ""
    if ranked:
        return min(ranked, key=lambda r: r[:4])[-1], ""
    kinds = "/".join(roles) if roles else "element"
    names = sorted({e.name for e in pool if e.rendered and e.name})[:12]
    return None, f"no {kinds} named {quote(want)} on the page" + (
        f" (there are: {', '.join(map(quote, names))})" if names else ""
    )


def translate(command: Command, page: Page) -> tuple[str | None, str]:
    """A BrowserGym high-level action for ``command`` on ``page``, or None and the reason (or a note when
    nothing needs doing, e.g. checking a box that is already checked)."""
    verb, target = command.verb, command.target
    if verb == "answer":
        return f"send_msg_to_user({command.text or ''!r})", ""
    if verb == "goto":
        return (f"goto({command.text!r})", "") if command.text else (None, 'goto needs a URL, e.g. goto "http://host/"')
    if verb in ("back", "forward"):
        return f"go_{verb}()", ""
    if verb == "scroll":
        return f"scroll(0, {SCROLL_PIXELS if command.text == 'down' else -SCROLL_PIXELS})", ""
    if verb == "press":
        key = command.text or ""
        if not key:
            return None, 'press needs a key, e.g. press "Enter"'
        focused = page.focused()
        return (f"press({focused.bid!r}, {key!r})" if focused else f"keyboard_press({key!r})"), ""
    if verb == "type":
        if target is None:
            element = page.focused() if (page.focused() and page.focused().role in _TEXT_ROLES) else None  # type: ignore[union-attr]
            element = element or next((e for e in page.elements if e.role in _TEXT_ROLES and e.rendered), None)
            why = "there is no text box on the page"
        else:
            element, why = find(page, target, _TEXT_ROLES)
        return (f"fill({element.bid!r}, {command.text!r})", "") if element else (None, why)
    if verb == "select":
        option_text = command.text or ""
        if target is not None:
            lst, why = find(page, target, _LIST_ROLES)
            if lst is None:
                return None, why
            options = [e for e in page.elements if e.role == "option" and e.owner == lst.bid]
        else:
            options = [e for e in page.elements if e.role == "option" and e.owner is not None]
        option, why = find(Page(page.title, tuple(options), "", None), Target(name=option_text))
        if option is None:
            return None, why.replace("no element", "no option")
        return f"select_option({option.owner!r}, {option.name!r})", ""
    if target is None:  # click / check / uncheck / focus always parse one
        return None, f"{verb} needs an element"
    if verb in ("check", "uncheck"):
        element, why = find(page, target, _CHECK_ROLES)
        if element is None:
            return None, why
        if (element.checked == "true") == (verb == "check"):
            return None, f"{element.role} {quote(element.name)} is already {verb}ed"
        if verb == "uncheck" and element.role == "radio":
            return None, "a radio button cannot be unchecked; check another one of its group"
        return f"click({element.bid!r})", ""
    element, why = find(page, target)
    if element is None:
        return None, why
    return (f"focus({element.bid!r})" if verb == "focus" else f"click({element.bid!r})"), ""


def semantic_actions(page: Page, web: bool = False) -> tuple[str, ...]:
    """Closed-form actions over the rendered controls (typing is open-ended: ``type "TEXT" into ...``);
    with ``web``, also ``go back``, ``scroll down`` and ``scroll up`` (``answer``/``goto`` are open-ended)."""
    out: list[str] = []
    seen: set[str] = set()
    for e in page.elements:
        if not e.rendered or not (e.name or e.role in _LIST_ROLES):
            continue
        ref = quote(e.name)
        if e.role in _CHECK_ROLES:
            action = f"{'uncheck' if e.checked == 'true' and e.role != 'radio' else 'check'} {ref}"
        elif e.role in _TEXT_ROLES:
            action = f"focus {ref}"
        elif e.role in _LIST_ROLES:
            where = f" in {ref}" if e.name else ""
            out.extend(f"select {quote(o.name)}{where}" for o in page.elements if o.owner == e.bid)
            continue
        else:
            action = f"click {ref}"
        if action not in seen:
            seen.add(action)
            out.append(action)
    for e in page.elements:  # unnamed text boxes by position
        if e.role in _TEXT_ROLES and e.rendered and not e.name:
            out.append(f"focus {e.role} {e.index}")
    out.append('press "Enter"')
    if web:
        out.extend(("go back", "scroll down", "scroll up"))
    return tuple(out)


# --- the warm BrowserGym env ------------------------------------------------------------------------------
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


def _warm_env_class() -> type:
    """:class:`WarmBrowserEnv`, built on first use so that importing this module imports no browser code."""
    global WarmBrowserEnv
    if WarmBrowserEnv is not None:
        return WarmBrowserEnv
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

    WarmBrowserEnv = _WarmBrowserEnv
    return WarmBrowserEnv


WarmBrowserEnv: Any = None  # the class, once :func:`_warm_env_class` has built it


# --- the suite lifecycle ---------------------------------------------------------------------------------
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
            self._env = _warm_env_class()(entry, kwargs, wrapper, fresh_context=self.fresh_context)
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
        self._description = _norm(obs["goal"])
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
        raw = _RAW.match(action or "")
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

    def valid_actions(self) -> tuple[str, ...]:
        """Closed-form semantic actions over the rendered controls now (typing is open: ``type "TEXT" into
        "FIELD"`` is accepted but not listed)."""
        if self._page is None:
            raise RuntimeError("call start() first")
        return semantic_actions(self._page, web=bool(self.verbs & WEB_VERBS))

    def num_moves(self) -> int:
        return self._steps
