"""Where dreamer_gym keeps what it builds once per machine (converted models, generated games, pools)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$DREAMER_GYM_CACHE`` or ``~/.cache/dreamer_gym``."""
    return Path(os.environ.get("DREAMER_GYM_CACHE", Path.home() / ".cache" / "dreamer_gym"))
