"""Cheap checks that a suite can run here, made when an env is built so that a missing dataset or server
fails at once with the fix, not minutes later inside an evaluation worker."""
from __future__ import annotations

import os

from dreamer_gym.errors import SuiteError

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
            "On a machine without them, use MemoryConsolidation-MiniWoB-v0 for the web transfer suite."
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


def check_available(suite: str) -> None:
    """Fail fast when ``suite`` cannot run on this machine (official data, servers, browser or package
    missing). Cheap: nothing is started."""
    if suite == "alfworld":
        from dreamer_gym.suites.alfworld import official_games_dir

        official_games_dir()
    elif suite in ("miniwob", "webarena"):
        if suite == "webarena":
            check_webarena()
        from dreamer_gym.suites.web.chromium import check_chromium

        check_chromium()
        if suite == "webarena":
            check_webarena_package()
