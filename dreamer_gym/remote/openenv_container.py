"""What the OpenEnv container serves, read from its environment variables.

A container is configured by ``docker run -e KEY=VALUE`` (or a Hugging Face Space's variables), not by flags,
so the deployable environment (``deploy/dreamer_gym_env``: ``openenv.yaml``, ``server/app.py``,
``server/Dockerfile``) builds its app from these variables, with the same :func:`make_app` that
``dreamer-gym serve ENV_ID --max-sessions N --env-kwargs JSON`` uses: a container serves exactly what the CLI
serves. The Dockerfile's ``ENV`` lines hold the defaults; ``tests/test_openenv_container.py`` reads them from
there, so they cannot drift from what the test starts.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dreamer_gym.errors import ConfigError

ENV_ID_VAR = "DREAMER_GYM_ENV_ID"
MAX_SESSIONS_VAR = "DREAMER_GYM_MAX_SESSIONS"
ENV_KWARGS_VAR = "DREAMER_GYM_ENV_KWARGS"


@dataclass(frozen=True)
class ContainerSettings:
    """The three things ``dreamer-gym serve`` takes besides where to bind (uvicorn's ``--host``/``--port``)."""

    env_id: str
    max_sessions: int = 1
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ContainerSettings:
        """Parse the variables; each bad one is a ConfigError naming it and how to set it.

        Raises:
            ConfigError: the id is unset, the session count is not an int >= 1, or the kwargs are not a JSON object.
        """
        env_id = environ.get(ENV_ID_VAR, "").strip()
        if not env_id:
            raise ConfigError(f"{ENV_ID_VAR} is not set: set it to a registered id, e.g. "
                              f"`docker run -e {ENV_ID_VAR}=MemoryConsolidation-ScienceWorld-v1 ...`")
        raw_sessions = environ.get(MAX_SESSIONS_VAR, "1").strip()
        try:
            max_sessions = int(raw_sessions)
        except ValueError:
            max_sessions = 0
        if max_sessions < 1:
            raise ConfigError(f"Expected {MAX_SESSIONS_VAR} to be an int >= 1 (concurrent WebSocket sessions), "
                              f"got {raw_sessions!r}")
        raw_kwargs = environ.get(ENV_KWARGS_VAR, "").strip() or "{}"
        try:
            env_kwargs = json.loads(raw_kwargs)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"Expected {ENV_KWARGS_VAR} to be a JSON object, e.g. "
                              f"'{{\"eval_in_family\": 1}}'; it is not JSON ({exc})") from None
        if not isinstance(env_kwargs, dict):
            raise ConfigError(f"Expected {ENV_KWARGS_VAR} to be a JSON object, got {type(env_kwargs).__name__}")
        return cls(env_id=env_id, max_sessions=max_sessions, env_kwargs=env_kwargs)


def app_from_environ(environ: Mapping[str, str]) -> Any:
    """The ASGI app the container's ``uvicorn server.app:app`` serves: ``make_app`` of :class:`ContainerSettings`.

    Raises:
        ConfigError: a bad variable (named), an unknown id or env kwarg, or OpenEnv not installed.
    """
    from dreamer_gym.remote.openenv_server import make_app

    settings = ContainerSettings.from_environ(environ)
    return make_app(settings.env_id, max_sessions=settings.max_sessions, **settings.env_kwargs)
