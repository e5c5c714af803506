"""An env id served over OpenEnv (real uvicorn in a subprocess, real reward service and JVM behind it), driven
by OpenEnv's own clients: the served episode equals the in-process one, and a dead server fails fast."""
from __future__ import annotations

import concurrent.futures
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from helpers import SMALL, call, descendants, make_env, wait_gone

pytestmark = pytest.mark.jvm

ENV_ID = "MemoryConsolidation-ScienceWorld-v0"
SEED = 7
OPTIONS = {"family": "power-component"}
START_TIMEOUT_S = 90.0


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(start: Callable[[int], subprocess.Popen[bytes]], timeout_s: float = START_TIMEOUT_S) -> Server:
    """``start(port)`` (a server process told to bind ``port``) on a free port, returned once /health answers."""
    for _ in range(3):  # a free port can be taken between the probe and the bind: try another
        port = _free_port()
        process = start(port)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout_s
        while process.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if json.load(response) == {"status": "healthy"}:
                        return Server(url, process)
            except OSError:
                time.sleep(0.1)
        stop_server(process)
    raise AssertionError(f"the OpenEnv server did not come up: {process.args}")


def start_server(env_kwargs: dict[str, Any]) -> Server:
    """``dreamer-gym serve`` (the CLI's real entry point) on a free port, once /health answers."""
    return launch(lambda port: subprocess.Popen([sys.executable, "-m", "dreamer_gym.cli", "serve", ENV_ID,
                                                 "--port", str(port), "--env-kwargs", json.dumps(env_kwargs),
                                                 "--log-level", "warning"]))


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (uvicorn closes the sessions, whose envs stop their reward services), then make sure."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = start_server(SMALL)
    yield srv
    below = descendants(srv.process.pid)  # reward services and their JVMs
    stop_server(srv.process)
    assert srv.process.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after its shutdown
    assert wait_gone(below, 30) == set(), "the server left processes behind"


def connect(url: str, **kwargs: Any) -> Any:
    from dreamer_gym.remote.openenv_server import ConsolidationEnvClient

    return ConsolidationEnvClient(base_url=url, message_timeout_s=kwargs.pop("message_timeout_s", 120), **kwargs).sync()


def as_json(value: Any) -> Any:
    """What JSON makes of an in-process value (numpy to plain types), written independently of the server's."""
    def plain(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            return x.tolist()
        if isinstance(x, np.generic):
            return x.item()
        raise TypeError(f"{type(x).__name__} is not JSON")

    return json.loads(json.dumps(value, default=plain))


def served_fields(result: Any) -> dict[str, Any]:
    obs = result.observation
    assert obs.reward == result.reward and obs.done == result.done
    return {"region": obs.region, "result": obs.result, "budget": obs.budget, "info": obs.info,
            "terminated": obs.terminated, "truncated": obs.truncated, "reward": result.reward, "done": result.done}


def local_fields(obs: dict[str, Any], info: dict[str, Any], reward: float | None = None,
                 terminated: bool = False, truncated: bool = False) -> dict[str, Any]:
    return {"region": obs["region"], "result": obs["result"], "budget": obs["budget"].tolist(), "info": as_json(info),
            "terminated": terminated, "truncated": truncated, "reward": reward, "done": terminated or truncated}


def episode_actions(region: list[dict[str, Any]]) -> list[str]:
    ids = [e["id"] for e in region]
    return [call("read_entry", id=ids[0]), call("keep", ids=["no-such-id"]), call("keep", ids=ids), call("commit")]


def test_served_episode_equals_in_process(server: Server) -> None:
    # served: reset with a seed and options, read, a bad call, keep everything, commit
    with connect(server.url) as client:
        first = client.reset(seed=SEED, options=OPTIONS)
        assert first.reward is None and not first.done
        assert first.observation.info["family"] == OPTIONS["family"]
        actions = episode_actions(first.observation.info["region"])
        served = [served_fields(first)] + [served_fields(client.step(a)) for a in actions]
        state = client.state()
        assert state.step_count == len(actions) and state.episode_id and state.env_id == ENV_ID

    read, bad, keep, commit = served[1:]
    assert read["info"]["last_error"] is None and first.observation.info["region"][0]["id"] in read["result"]
    assert bad["info"]["last_error"] and bad["result"].startswith("ERROR:")  # an observation, not an exception
    assert bad["reward"] == pytest.approx(-0.01) and not bad["done"]
    assert keep["info"]["last_error"] is None and keep["reward"] == 0.0
    assert commit["done"] and commit["terminated"] and not commit["truncated"]
    assert isinstance(commit["reward"], float)
    assert {"score_before", "score_after", "reward_components", "comparable"} <= commit["info"].keys()
    assert commit["info"]["comparable"] is False  # the small evaluation is an experiment, and says so

    # in-process (env and reward service): the same kwargs, seed, options and actions give the same observations
    # and rewards
    env = make_env(ENV_ID, service="inprocess")
    try:
        obs, info = env.reset(seed=SEED, options=OPTIONS)
        local = [local_fields(obs, info)]
        for action in actions:
            obs, reward, terminated, truncated, info = env.step(action)
            local.append(local_fields(obs, info, reward, terminated, truncated))
    finally:
        env.close()
    assert len(local) == len(served)
    for i, (mine, theirs) in enumerate(zip(local, served)):
        assert mine == theirs, f"step {i} differs"


def test_openenv_generic_client_and_http_routes(server: Server) -> None:
    """An OpenEnv client that knows nothing of dreamer_gym plays the same protocol; the routes describe it."""
    from openenv.core import GenericEnvClient

    with urllib.request.urlopen(f"{server.url}/schema", timeout=10) as response:
        schema = json.load(response)
    assert "tool_call" in schema["action"]["required"]
    assert {"region", "result", "budget", "info"} <= schema["observation"]["properties"].keys()
    with urllib.request.urlopen(f"{server.url}/metadata", timeout=30) as response:
        metadata = json.load(response)
    assert metadata["name"] == ENV_ID and '{"tool": "commit"}' in metadata["readme_content"]

    with GenericEnvClient(base_url=server.url, message_timeout_s=120).sync() as client:
        result = client.reset(seed=SEED, options=OPTIONS)
        ids = [e["id"] for e in result.observation["info"]["region"]]
        result = client.step({"tool_call": call("keep", ids=ids[:1])})
        assert result.observation["result"].startswith("kept 1 ") and result.reward == 0.0 and not result.done
        with pytest.raises(RuntimeError, match="options"):  # a bad reset option is the env's ConfigError, raised here
            client.reset(seed=SEED, options={"family": "no-such-family"})


def test_client_fails_fast_when_the_server_dies() -> None:
    srv = start_server(SMALL)
    try:
        client = connect(srv.url, message_timeout_s=60)
        try:
            first = client.reset(seed=SEED, options=OPTIONS)
            below = descendants(srv.process.pid)
            assert below, "the session's reward service runs below the server"
            srv.process.kill()  # a crash: no close frame, no graceful shutdown
            srv.process.wait()

            with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a hang fails the test instead of blocking it
                started = time.monotonic()
                future = pool.submit(client.step, call("keep", ids=[first.observation.info["region"][0]["id"]]))
                with pytest.raises(ConnectionError, match="closed the connection"):
                    future.result(timeout=20)
                assert time.monotonic() - started < 5.0
                with pytest.raises(ConnectionError, match="Failed to connect"):  # and later calls too
                    pool.submit(client.reset, seed=SEED).result(timeout=20)
        finally:
            client.close()
        # the orphaned reward service sees its pipe close and stops its simulators
        assert wait_gone(below, 30) == set(), "the killed server left processes behind"
    finally:
        stop_server(srv.process)


@pytest.mark.heavy
def test_throughput_served_vs_in_process(server: Server) -> None:
    """Keep-all episodes (reset, keep, commit) per second, served vs in-process, same seeds, after a warm-up.
    The two alternate episode by episode, so a machine busy with other work slows both alike."""
    seeds = list(range(100, 110))

    def keep_all(env: Any, seed: int) -> tuple[float, float]:
        started = time.perf_counter()
        region = env.reset(seed)
        env.step(call("keep", ids=[e["id"] for e in region]))
        reward = env.step(call("commit"))
        return reward, time.perf_counter() - started

    class Local:
        def __init__(self) -> None:
            self.env = make_env(ENV_ID)

        def reset(self, seed: int) -> list[dict[str, Any]]:
            return self.env.reset(seed=seed)[1]["region"]

        def step(self, action: str) -> float:
            return self.env.step(action)[1]

    class Served:
        def __init__(self, client: Any) -> None:
            self.client = client

        def reset(self, seed: int) -> list[dict[str, Any]]:
            return self.client.reset(seed=seed).observation.info["region"]

        def step(self, action: str) -> float:
            return self.client.step(action).reward

    local = Local()
    try:
        with connect(server.url) as client:
            served = Served(client)
            keep_all(local, 0)  # warm-up: services, JVMs
            keep_all(served, 0)
            runs = [(keep_all(local, s), keep_all(served, s)) for s in seeds]
    finally:
        local.env.close()

    assert [mine[0] for mine, _ in runs] == [theirs[0] for _, theirs in runs]  # same rewards
    rates = {"in_process_eps_per_s": len(seeds) / sum(mine[1] for mine, _ in runs),
             "served_eps_per_s": len(seeds) / sum(theirs[1] for _, theirs in runs)}
    print(json.dumps({**rates, "episodes": len(seeds)}))
    assert rates["served_eps_per_s"] > 0.5 * rates["in_process_eps_per_s"]


# --- errors a caller causes: a 4xx with a message over HTTP, a clear refusal at capacity ---------------------------
def post(url: str, body: bytes) -> tuple[int, dict[str, Any]]:
    """POST ``body`` (JSON) and return the status and the JSON answer, error statuses included."""
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_bad_http_calls_are_answered_with_a_4xx_and_a_message(server: Server) -> None:
    """OpenEnv's HTTP /step is stateless (a fresh env per request), so it can never follow a reset: a 409 that
    says to play over /ws, not a bare 500. A malformed body and a bad reset option are 422s that name the problem."""
    keep = json.dumps({"action": {"tool_call": call("commit")}}).encode()
    status, answer = post(f"{server.url}/step", keep)
    assert status == 409 and "reset" in answer["detail"] and "/ws" in answer["detail"]
    status, answer = post(f"{server.url}/step", json.dumps({"action": {"tool_call": call("commit")},
                                                            "episode_id": "no-such-session"}).encode())
    assert status == 409 and "no session" in answer["detail"]
    status, answer = post(f"{server.url}/step", b'{"action": ')  # not JSON
    assert status == 422 and answer["detail"]
    status, answer = post(f"{server.url}/step", json.dumps({"action": {"tool": "commit"}}).encode())  # no tool_call
    assert status == 422 and "tool_call" in json.dumps(answer["detail"])
    status, answer = post(f"{server.url}/reset", json.dumps({"seed": 0, "options": {"family": "no-such-family"}}).encode())
    assert status == 422 and "no-such-family" in answer["detail"]


def test_a_client_past_max_sessions_is_told_the_server_is_at_capacity(server: Server) -> None:
    """The module's server runs with --max-sessions 1: while one client holds the session, a second one's first
    call raises ServerAtCapacity (a ConnectionError) saying so, and the first client plays on."""
    from dreamer_gym.remote.openenv_server import ServerAtCapacity

    with connect(server.url) as first:
        region = first.reset(seed=SEED, options=OPTIONS).observation.info["region"]
        second = connect(server.url, message_timeout_s=30)
        try:
            with pytest.raises(ServerAtCapacity, match=r"at capacity \(1 of 1 sessions open\).*--max-sessions"):
                second.reset(seed=SEED, options=OPTIONS)
        finally:
            second.close()
        kept = first.step(call("keep", ids=[region[0]["id"]]))  # no commit: that would start the session's JVM
        assert kept.observation.result.startswith("kept 1 ") and not kept.done
