"""The page as text: the elements an action can name, read from BrowserGym's accessibility tree (AXTree
plus extra element properties), and the compact rendering the agent observes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

INTERACTIVE_ROLES = (
    "button", "link", "checkbox", "radio", "textbox", "searchbox", "combobox", "listbox", "option", "tab",
    "menuitem", "menuitemcheckbox", "menuitemradio", "switch", "slider", "spinbutton", "treeitem",
)  # fmt: skip
CLICK_RANK = {role: rank for rank, role in enumerate(INTERACTIVE_ROLES)}
TEXT_ROLES = ("textbox", "searchbox", "spinbutton")
CHECK_ROLES = ("checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio")
LIST_ROLES = ("combobox", "listbox")
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
            if self.role in TEXT_ROLES
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


def norm(text: Any) -> str:
    """``text`` with runs of whitespace (and no-break spaces) as one space, stripped."""
    return re.sub(r"\s+", " ", str(text or "").replace("\xa0", " ")).strip()


def quote(text: str) -> str:
    """``text`` as a double-quoted string of the action language (backslash escapes)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


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
                text_of[key] = norm(node.get("name", {}).get("value"))
            else:
                parts = (subtree_text(by_id[c]) for c in node.get("childIds", ()) if c in by_id)
                text_of[key] = norm(" ".join(p for p in parts if p))
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
        name = norm(node.get("name", {}).get("value"))
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
            if not label and shown_role in (*TEXT_ROLES, *LIST_ROLES):
                label = norm(props.get("placeholder"))
                if not label and state["label"]:  # the text just before it (a <label> without `for`)
                    label = state["label"].rstrip(":").strip()
                    if lines and lines[-1].endswith(f"text {quote(state['label'])}"):
                        lines.pop()  # shown as the text box's name instead
            if not label and shown_role not in LIST_ROLES:  # a list's text is its options
                label = subtree_text(node)
            value = node.get("value", {}).get("value")
            if shown_role in TEXT_ROLES or shown_role == "combobox":
                value = "" if value is None else str(value)
            else:
                value = None
            if rendered or shown_role == "option":
                counts[shown_role] = counts.get(shown_role, 0) + 1
            element = Element(
                bid=str(bid), role=shown_role, name=label, index=counts.get(shown_role, 0), order=len(elements),
                rendered=rendered, value=value,
                checked=str(props["checked"]) if "checked" in props and shown_role in CHECK_ROLES else None,
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
            if shown_role in LIST_ROLES:
                child_owner = str(bid)
            state["label"], state["last_name"] = "", label
        for c in node.get("childIds", ()):
            if c in by_id:
                visit(by_id[c], child_depth, child_owner, child_inside, child_hush)

    title = ""
    if root is not None:
        title = norm(root.get("name", {}).get("value"))
        visit(root, 0, None, (), False)
    body = "\n".join(lines) if lines else "(the page shows nothing)"
    return Page(title, tuple(elements), f"page: {title}\n{body}", str(focused_bid) if focused_bid else None)


def _clickable_text(
    node: dict[str, Any], extra: dict[str, Any], bid: str, subtree_text: Any, has_interactive: Any
) -> bool:
    """A plain element (span, div, ...) with a click handler, some text and no control inside (MiniWoB links)."""
    return bool(extra.get(bid, {}).get("clickable")) and bool(subtree_text(node)) and not has_interactive(node)
