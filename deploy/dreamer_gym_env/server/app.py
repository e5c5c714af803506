"""The OpenEnv app of this environment, as OpenEnv's tooling runs it.

The container's CMD (server/Dockerfile) is ``uvicorn server.app:app`` from this folder, the ``app`` that
openenv.yaml names; ``uv run server`` and ``python -m server.app`` call :func:`main`. The app is what
``dreamer-gym serve $DREAMER_GYM_ENV_ID --max-sessions $DREAMER_GYM_MAX_SESSIONS --env-kwargs
$DREAMER_GYM_ENV_KWARGS`` serves (``dreamer_gym.remote.openenv_container``): one env per WebSocket session on
``/ws``, plus OpenEnv's ``/health``, ``/schema`` and ``/metadata``.
"""
from __future__ import annotations

import argparse
import os

from dreamer_gym.remote.openenv_container import app_from_environ

app = app_from_environ(os.environ)


def main() -> None:
    """Serve :data:`app` with uvicorn (``--host``, ``--port``; ``$PORT`` or 8000, the manifest's port)."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
