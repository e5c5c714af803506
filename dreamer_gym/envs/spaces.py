"""Text spaces with a real charset, so `sample()` and `contains()` work and `check_env` passes."""
from __future__ import annotations

import re
import string

from gymnasium import spaces

CHARSET: str = "".join(sorted(set(string.printable) - set("\x0b\x0c\r")))
_ALLOWED = frozenset(CHARSET)


_OUTSIDE = re.compile(r"[^\t\n\x20-\x7e]")


def sanitize(text: str, max_length: int) -> str:
    """Map characters outside :data:`CHARSET` to '?' and cut to ``max_length`` (observations only)."""
    clean = _OUTSIDE.sub("?", text)
    return clean if len(clean) <= max_length else clean[: max_length - 3] + "..."


def text_space(max_length: int) -> spaces.Text:
    return spaces.Text(max_length=max_length, min_length=0, charset=CHARSET)
