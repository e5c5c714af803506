"""Debian's Chromium for playwright 1.44: playwright cannot download its own build here, so a wrapper
script where playwright looks for that build execs ``/usr/lib/chromium/chromium`` with this machine's flags
(``make setup`` installs the Debian package). Also the install hints the web suites' errors name."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

from dreamer_gym.errors import SuiteError
from dreamer_gym.paths import cache_root

DEFAULT_CHROMIUM = "/usr/lib/chromium/chromium"
CHROMIUM_FLAGS = (
    "--no-sandbox --disable-gpu --disable-quic --disable-sync --no-first-run --disable-background-networking "
    "--disable-component-update"
)
INSTALL_HINT = (
    "run `make setup` (it installs the Debian packages `chromium` and `chromium-driver` with apt: "
    "`apt-get install --no-install-recommends chromium chromium-driver`)"
)


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
    spec = find_spec("playwright")
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


def pip_hint(extra: str = "web") -> str:
    return f'pip install "dreamer-gym[{extra}]"'


def find_spec(module: str, extra: str = "web") -> Any:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        import gymnasium

        raise gymnasium.error.DependencyNotInstalled(f"{module} is not installed: run {pip_hint(extra)}")
    return spec
