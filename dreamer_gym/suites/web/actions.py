"""The semantic action language over a :class:`~dreamer_gym.suites.web.page.Page` (see the package
docstring): parse a command, find the element it names, translate it into a BrowserGym high-level action,
and list the closed-form actions the page allows."""

from __future__ import annotations

import re
from dataclasses import dataclass

from dreamer_gym.suites.web.page import (
    CHECK_ROLES,
    CLICK_RANK,
    LIST_ROLES,
    TEXT_ROLES,
    Element,
    Page,
    norm,
    quote,
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
RAW_ACTION = re.compile(r"^\s*([a-z_]+)\s*\(.*\)\s*$", re.DOTALL)
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
    want = norm(target.name)
    ranked: list[tuple[int, int, int, int, Element]] = []
    for e in pool:
        if e.name == want:
            tier = 0
        elif _fold(e.name) == _fold(want):
            tier = 1
        else:
            continue
        ranked.append((tier, 0 if e.rendered else 1, CLICK_RANK.get(e.role, len(CLICK_RANK)), e.order, e))
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
            element = page.focused() if (page.focused() and page.focused().role in TEXT_ROLES) else None  # type: ignore[union-attr]
            element = element or next((e for e in page.elements if e.role in TEXT_ROLES and e.rendered), None)
            why = "there is no text box on the page"
        else:
            element, why = find(page, target, TEXT_ROLES)
        return (f"fill({element.bid!r}, {command.text!r})", "") if element else (None, why)
    if verb == "select":
        option_text = command.text or ""
        if target is not None:
            lst, why = find(page, target, LIST_ROLES)
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
        element, why = find(page, target, CHECK_ROLES)
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
        if not e.rendered or not (e.name or e.role in LIST_ROLES):
            continue
        ref = quote(e.name)
        if e.role in CHECK_ROLES:
            action = f"{'uncheck' if e.checked == 'true' and e.role != 'radio' else 'check'} {ref}"
        elif e.role in TEXT_ROLES:
            action = f"focus {ref}"
        elif e.role in LIST_ROLES:
            where = f" in {ref}" if e.name else ""
            out.extend(f"select {quote(o.name)}{where}" for o in page.elements if o.owner == e.bid)
            continue
        else:
            action = f"click {ref}"
        if action not in seen:
            seen.add(action)
            out.append(action)
    for e in page.elements:  # unnamed text boxes by position
        if e.role in TEXT_ROLES and e.rendered and not e.name:
            out.append(f"focus {e.role} {e.index}")
    out.append('press "Enter"')
    if web:
        out.extend(("go back", "scroll down", "scroll up"))
    return tuple(out)
