"""Prompt templates as files (``*.md`` beside this module), so they can be read, diffed and cited.

Templates use ``str.format`` fields (``{task}``); literal braces are doubled (``{{"tool": "commit"}}``).
"""
from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load_prompt(name: str) -> str:
    """The text of ``dreamer_gym/prompts/<name>.md`` (trailing newline stripped)."""
    try:
        return resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8").rstrip("\n")
    except FileNotFoundError as exc:
        known = sorted(p.name[:-3] for p in resources.files(__package__).iterdir() if p.name.endswith(".md"))
        raise KeyError(f"Unknown prompt {name!r}; known: {known}") from exc
