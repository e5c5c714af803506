"""Any registered dreamer_gym env id as an OpenEnv environment server, and a typed OpenEnv client for it.

OpenEnv (``openenv-core``) is what TRL, SkyRL and verifiers speak to remote environments: a FastAPI app whose
``/ws`` WebSocket holds one environment per connection (reset/step/state messages), plus stateless HTTP
routes (``/reset``, ``/step``, ``/state``, ``/metadata``, ``/schema``, ``/health``). The app here is built by
OpenEnv's own factory around :class:`ConsolidationEnvironment`, so any OpenEnv client can train on an id::

    dreamer-gym serve MemoryConsolidation-ScienceWorld-v1 --port 8000

    from dreamer_gym.remote.openenv_server import ConsolidationEnvClient
    with ConsolidationEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(seed=0, options={"family": "grow-plant"})
        ids = [e["id"] for e in result.observation.info["region"]]
        env.step('{"tool": "keep", "ids": %s}' % json.dumps(ids))
        result = env.step('{"tool": "commit"}')      # result.reward, result.done

An action is one tool call, the JSON string the gym env takes (``ConsolidationAction.tool_call``). An
observation is the gym observation made JSON-safe (``region``, ``result``, ``budget``) plus the step's
``info`` (JSON-safe), ``terminated``/``truncated``, and OpenEnv's ``reward``/``done``. A bad tool call is an
observation with ``info["last_error"]`` set, as in-process; a bad reset option is a server error that the
client raises.

Errors over plain HTTP are answers, not bare 500s: OpenEnv's ``POST /step`` is stateless (each request builds a
fresh env that was never reset), so it answers 409 with a message saying to play over ``/ws``; a bad reset
option 422; a malformed body 422 (FastAPI's). A client refused because the server is at ``--max-sessions``
raises :class:`ServerAtCapacity` (a ``ConnectionError``) saying so.

OpenEnv is optional: importing this module never imports it. ``openenv-core==0.3.0`` declares gradio and
huggingface_hub versions that conflict with our pins, so ``make setup`` installs it with ``--no-deps``, plus
``fastmcp-slim[client]`` (its HTTP server module imports fastmcp at the top); fastapi, uvicorn, pydantic,
websockets and requests come with the ``llm`` extra.
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import math
import types
import uuid
from collections.abc import Mapping
from dataclasses import asdict, fields, is_dataclass
from typing import Any

import numpy as np

from dreamer_gym.cli_args import json_object
from dreamer_gym.errors import ConfigError

from dreamer_gym.cli_errors import OPENENV_INSTALL as INSTALL
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
_CLASSES = ("ConsolidationAction", "ConsolidationObservation", "ConsolidationEnvironment", "ConsolidationEnvClient")
STATELESS_STEP = ("this env has no episode to step: call reset first. Over plain HTTP that is impossible: OpenEnv's "
                  "POST /reset and POST /step are stateless (each request builds a fresh env, so a /step never sees "
                  "a /reset and there is no session to name); play episodes over the WebSocket /ws "
                  "(dreamer_gym.remote.openenv_server.ConsolidationEnvClient, or any OpenEnv EnvClient)")


class EpisodeNotStarted(ConfigError):
    """``step`` before ``reset`` (always the case for OpenEnv's stateless HTTP ``/step``): HTTP 409."""


class ServerAtCapacity(ConnectionError):
    """The server refused this client's session: ``--max-sessions`` sessions are already open."""


# --- the env -----------------------------------------------------------------------------------------------
def build_env(env_id: str, **env_kwargs: Any) -> Any:
    """The env a server session runs: ``ConsolidationEnv.experiment(env_id, **env_kwargs)`` wrapped as
    ``gym.make`` wraps, i.e. exactly what ``tests/helpers.make_env`` builds. Without kwargs it is the id itself;
    kwargs may change any field (an evaluation size, the service), and where one changes what the reward
    measures its commits say ``comparable: False`` (``gym.make`` of the id would refuse such a kwarg)."""
    from gymnasium.wrappers.common import OrderEnforcing, PassiveEnvChecker

    from dreamer_gym.envs.config import ConsolidationConfig
    from dreamer_gym.envs.consolidation import ConsolidationEnv

    # what the env takes by name, less `reward_service` (a session owns its service, so sessions share nothing)
    allowed = {f.name for f in fields(ConsolidationConfig)} | {"render_mode", "region_chars"}
    unknown = sorted(set(env_kwargs) - allowed)
    if unknown:
        raise ConfigError(f"Unknown env kwarg(s) {unknown}; the env takes {sorted(allowed)}")
    return OrderEnforcing(PassiveEnvChecker(ConsolidationEnv.experiment(env_id, **env_kwargs)))


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON types (numpy arrays and scalars, tuples, dataclasses, non-str keys), so that what
    a client receives equals this, in-process. Non-finite floats become None (JSON has no NaN)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if is_dataclass(value) and not isinstance(value, type):
        return jsonable(asdict(value))
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v) for v in value), key=repr)
    return str(value)


def observation_fields(obs: Mapping[str, Any], info: Mapping[str, Any], reward: float | None,
                       terminated: bool, truncated: bool) -> dict[str, Any]:
    """A gym step (or reset, ``reward`` None) as the fields of a ``ConsolidationObservation``: what the server
    sends and what a test computes in-process to compare with it."""
    return {
        "region": str(obs["region"]),
        "result": str(obs["result"]),
        "budget": [int(x) for x in np.asarray(obs["budget"]).tolist()],
        "info": jsonable(info),
        "terminated": bool(terminated),
        "truncated": bool(truncated),
        "done": bool(terminated or truncated),
        "reward": None if reward is None else float(reward),
    }


# --- OpenEnv, loaded on first use ----------------------------------------------------------------------------
@functools.cache
def _openenv() -> types.SimpleNamespace:
    """Import OpenEnv and define the classes on it (once per process, so their identities are stable).

    Raises:
        ConfigError: OpenEnv, or a package its server or client imports, is not installed.
    """
    if importlib.util.find_spec("openenv") is None:
        raise ConfigError(f"serving an env over OpenEnv needs the openenv-core package: {INSTALL} (`make setup` does "
                          "this; --no-deps: its declared gradio and huggingface_hub requirements conflict with "
                          "dreamer_gym's pins, and its server and client need only fastapi, uvicorn, pydantic, "
                          "websockets, requests and fastmcp)")
    try:
        from openenv.core.client_types import StepResult
        from openenv.core.env_client import EnvClient
        from openenv.core.env_server.http_server import create_fastapi_app
        from openenv.core.env_server.interfaces import Environment
        from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
        from pydantic import Field
    except ModuleNotFoundError as exc:
        raise ConfigError(f"OpenEnv's server and client import {exc.name!r}, which is not installed: "
                          f"pip install {exc.name}") from exc

    class ConsolidationAction(Action):
        """One tool call, as the JSON string the gym env's ``step`` takes (a bad one is an observation)."""

        tool_call: str = Field(description='a JSON tool call, e.g. {"tool": "keep", "ids": ["..."]} or '
                                           '{"tool": "commit"}')

    class ConsolidationObservation(Observation):
        """The gym observation and info, JSON-safe; ``done`` is ``terminated or truncated``."""

        region: str = Field(default="", description="the region listing, then the new region so far")
        result: str = Field(default="", description="what the last tool call returned (or its error)")
        budget: list[int] = Field(default_factory=list, description="[calls left, emits left, emitted, region size]")
        info: dict[str, Any] = Field(default_factory=dict, description="the gym info, JSON-safe")
        terminated: bool = Field(default=False, description="the episode ended with a commit")
        truncated: bool = Field(default=False, description="the episode ran out of tool calls (it was committed)")

    class ConsolidationEnvironment(Environment[ConsolidationAction, ConsolidationObservation, State]):
        """One dreamer_gym env per OpenEnv session.

        Sessions may run concurrently: each instance owns its env, its reward-service process and its store
        (``:memory:`` unless ``store_path`` says otherwise), so nothing mutable is shared."""

        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> None:
            super().__init__()
            self.env_id = env_id
            self._env = build_env(env_id, **dict(env_kwargs or {}))
            self._state = State(env_id=env_id)
            self._started = False

        def reset(self, seed: int | None = None, episode_id: str | None = None,
                  options: dict[str, Any] | None = None, **kwargs: Any) -> ConsolidationObservation:
            """``seed`` and ``options`` as the gym env's ``reset`` takes them (bad options raise ConfigError,
            which the client raises); ``episode_id`` names the episode in :attr:`state`."""
            if kwargs:
                raise ConfigError(f"Unknown reset argument(s) {sorted(kwargs)}; reset takes seed, episode_id, options")
            obs, info = self._env.reset(seed=seed, options=options)
            self._started = True
            self._state = State(episode_id=episode_id or uuid.uuid4().hex, step_count=0, env_id=self.env_id,
                                seed=seed, family=info.get("family"), done=False)
            return ConsolidationObservation(**observation_fields(obs, info, None, False, False))

        def step(self, action: ConsolidationAction, timeout_s: float | None = None,
                 **kwargs: Any) -> ConsolidationObservation:
            """One tool call. ``timeout_s`` is ignored: a commit runs its evaluation to the end (the client's
            ``message_timeout_s`` bounds the wait)."""
            if not self._started:
                raise EpisodeNotStarted(STATELESS_STEP)
            call = action if isinstance(action, str) else action.tool_call
            obs, reward, terminated, truncated, info = self._env.step(call)
            self._state.step_count += 1
            self._state.done = bool(terminated or truncated)
            return ConsolidationObservation(**observation_fields(obs, info, reward, terminated, truncated))

        @property
        def state(self) -> State:
            return self._state

        def get_metadata(self) -> EnvironmentMetadata:
            from dreamer_gym import __version__
            from dreamer_gym.envs.tools import TOOLS

            return EnvironmentMetadata(
                name=self.env_id,
                description=("Consolidate one region of an LLM agent's memory bank through JSON tool calls "
                             "(action.tool_call); the commit's reward is the downstream agent's score change on "
                             "held-out episodes minus a size cost. The tools are in readme_content."),
                readme_content="Tools (one per action.tool_call):\n\n" + "\n".join(f"- `{t}`" for t in TOOLS.values()),
                version=__version__,
            )

        def close(self) -> None:
            self._env.close()

    class ConsolidationEnvClient(EnvClient[ConsolidationAction, ConsolidationObservation, State]):
        """OpenEnv's WebSocket client, typed for these envs. ``step`` also takes the tool call as a plain string.

        A lost server or a reply later than ``message_timeout_s`` raises ``ConnectionError``/``TimeoutError``
        naming the URL, and drops the connection (a late reply must not be read as the next call's answer)."""

        def _step_payload(self, action: ConsolidationAction | str) -> dict[str, Any]:
            if isinstance(action, str):
                action = ConsolidationAction(tool_call=action)
            return action.model_dump()

        def _parse_result(self, payload: dict[str, Any]) -> StepResult[ConsolidationObservation]:
            reward, done = payload.get("reward"), bool(payload.get("done", False))
            observation = ConsolidationObservation(**{**payload.get("observation", {}), "reward": reward, "done": done})
            return StepResult(observation=observation, reward=reward, done=done)

        def _parse_state(self, payload: dict[str, Any]) -> State:
            return State(**payload)

        async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
            from websockets.exceptions import ConnectionClosed

            try:
                await self._send(message)
                response = await self._receive()
            except ConnectionClosed as exc:
                refusal = await self._last_words()  # what the server sent before it closed, if anything
                await self._drop()
                if refusal is not None:
                    raise self._refused(refusal) from exc
                raise ConnectionError(f"the OpenEnv server at {self._ws_url} closed the connection ({exc}); the "
                                      "session and its episode are gone (is the server still running?)") from exc
            except TimeoutError as exc:
                await self._drop()
                raise TimeoutError(f"no reply from {self._ws_url} within message_timeout_s={self._message_timeout} s; "
                                   "the connection is dropped") from exc
            except ConnectionError:
                await self._drop()
                raise
            except OSError as exc:
                await self._drop()
                raise ConnectionError(f"the connection to the OpenEnv server at {self._ws_url} failed: {exc}") from exc
            if response.get("type") == "error":
                data = response.get("data", {})
                if data.get("code") == "CAPACITY_REACHED":
                    await self._drop()
                    raise self._refused(data)
                raise RuntimeError(f"Server error: {data.get('message', 'Unknown error')} "
                                   f"(code: {data.get('code', 'UNKNOWN')})")
            return response

        async def _last_words(self) -> dict[str, Any] | None:
            """An error message the server sent before closing (OpenEnv refuses a session that way), or None."""
            import asyncio

            ws = self._ws
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=1.0) if ws is not None else None
                payload = json.loads(raw) if raw is not None else None
            except Exception:  # noqa: BLE001 - nothing buffered: the connection simply closed
                return None
            return payload.get("data") if isinstance(payload, dict) and payload.get("type") == "error" else None

        def _refused(self, data: dict[str, Any]) -> Exception:
            if data.get("code") == "CAPACITY_REACHED":
                return ServerAtCapacity(
                    f"the OpenEnv server at {self._ws_url} is at capacity ({data.get('active_sessions')} of "
                    f"{data.get('max_sessions')} sessions open): close another client, or start the server with a "
                    f"larger --max-sessions (server said: {data.get('message')})")
            return ConnectionError(f"the OpenEnv server at {self._ws_url} refused the session: "
                                   f"{data.get('message')} (code: {data.get('code')})")

        async def _drop(self) -> None:
            ws, self._ws = self._ws, None
            if ws is not None:
                try:
                    await ws.close()
                except Exception:  # noqa: BLE001 - the connection is being abandoned anyway
                    pass

    classes = (ConsolidationAction, ConsolidationObservation, ConsolidationEnvironment, ConsolidationEnvClient)
    for cls in classes:  # named as the module exposes them (its __getattr__), so they repr and pickle by name
        cls.__qualname__ = cls.__name__
    return types.SimpleNamespace(create_fastapi_app=create_fastapi_app, **{c.__name__: c for c in classes})


def __getattr__(name: str) -> Any:
    """The classes, defined on first use (they subclass OpenEnv's, which this module does not import eagerly)."""
    if name in _CLASSES:
        return getattr(_openenv(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- the app and the server --------------------------------------------------------------------------------
def make_app(env_id: str, *, max_sessions: int = 1, **env_kwargs: Any) -> Any:
    """The ASGI (FastAPI) app serving ``env_id``, built by OpenEnv's ``create_fastapi_app``: each WebSocket
    session runs its own ``build_env(env_id, **env_kwargs)``, at most ``max_sessions`` at once (each holds a
    reward-service process, and a JVM where the suite has one).

    An env is built and closed here first, so a bad id or kwarg fails now (ConfigError), not per session.
    OpenEnv's web UI (``ENABLE_WEB_INTERFACE``, gradio) is not mounted."""
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise ConfigError(f"Expected `max_sessions` to be an int >= 1, got {max_sessions!r}")
    openenv = _openenv()
    build_env(env_id, **env_kwargs).close()
    factory = functools.partial(openenv.ConsolidationEnvironment, env_id, dict(env_kwargs))
    app = openenv.create_fastapi_app(factory, openenv.ConsolidationAction, openenv.ConsolidationObservation,
                                     max_concurrent_envs=max_sessions)
    app.add_middleware(_QuietClientClose)
    _add_error_answers(app)
    return app


def _add_error_answers(app: Any) -> None:
    """HTTP answers with a message for the errors a caller causes (OpenEnv's routes let them become bare 500s):
    409 for a step with no episode (every plain-HTTP /step), 422 for a bad value (a reset option, an env kwarg)."""
    import gymnasium
    from starlette.responses import JSONResponse

    def answer(status: int) -> Any:
        async def handler(request: Any, exc: Exception) -> Any:
            return JSONResponse({"detail": f"{type(exc).__name__}: {exc}"}, status_code=status)
        return handler

    app.add_exception_handler(EpisodeNotStarted, answer(409))
    app.add_exception_handler(gymnasium.error.ResetNeeded, answer(409))
    app.add_exception_handler(ConfigError, answer(422))


class _QuietClientClose:
    """ASGI middleware: a WebSocket handler that ends with ``WebSocketDisconnect`` ends quietly.

    Why: OpenEnv's ``/ws`` handler, after the client's ``close`` message, destroys the session and then closes a
    socket the client has usually closed already; starlette raises ``WebSocketDisconnect`` there, which OpenEnv
    does not catch, so uvicorn logged a traceback per connection although nothing went wrong."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        from starlette.websockets import WebSocketDisconnect

        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            pass  # the client was gone; the session was destroyed before the close that raised this


def serve(env_id: str, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, max_sessions: int = 1,
          log_level: str = "info", **env_kwargs: Any) -> None:
    """Serve ``make_app(env_id, ...)`` with uvicorn until interrupted (SIGINT/SIGTERM close open sessions)."""
    _openenv()  # a missing OpenEnv is named with its install command before uvicorn (another of its needs) is
    import uvicorn

    uvicorn.run(make_app(env_id, max_sessions=max_sessions, **env_kwargs), host=host, port=port, log_level=log_level)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``dreamer-gym serve`` (shared by this module's own ``main``)."""
    parser.add_argument("env_id", metavar="ENV_ID", help="a registered id, e.g. MemoryConsolidation-ScienceWorld-v1")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"interface to bind (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to bind (default {DEFAULT_PORT})")
    parser.add_argument("--max-sessions", type=int, default=1,
                        help="concurrent WebSocket sessions, each with its own env and reward service (default 1)")
    parser.add_argument("--env-kwargs", type=json_object, default={}, metavar="JSON",
                        help='env kwargs as a JSON object, e.g. \'{"eval_in_family": 1, "eval_other": 0}\' '
                             "(an experiment on the id: commits say whether it is comparable)")
    parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])



def run(args: argparse.Namespace) -> int:
    """Serve what ``args`` (from :func:`add_arguments`) names."""
    serve(args.env_id, args.host, args.port, max_sessions=args.max_sessions, log_level=args.log_level,
          **args.env_kwargs)
    return 0
