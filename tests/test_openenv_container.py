"""The OpenEnv container recipe (deploy/dreamer_gym_env) as OpenEnv's tooling and a container runtime see it.

No Docker daemon runs here, so the image is not built in CI. What is checked instead, with OpenEnv's own code:
the folder passes ``openenv validate`` (``validate_multi_mode_deployment``) and ``openenv push``'s structure check
(``validate_env_structure``); the manifest has the fields of ``openenv init``'s template with its values; and the
Dockerfile's CMD, parsed from the Dockerfile with its ENV, WORKDIR and port, is started as the container starts it
(same argv through ``sh``, only the image's variables, the folder copied to a fresh directory), passes OpenEnv's
runtime validator (``openenv validate --url``) and plays one episode over ``/ws`` with the OpenEnv client.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers import SMALL, call, descendants, wait_gone
from test_openenv_server import Server, connect, launch, stop_server

ENV_DIR = Path(__file__).resolve().parents[1] / "deploy" / "dreamer_gym_env"
DOCKERFILE = ENV_DIR / "server" / "Dockerfile"
MAKEFILE = ENV_DIR.parents[1] / "Makefile"
CONTAINER_START_S = 180.0  # one env built and closed (a JVM) before uvicorn listens, on a loaded 2-core machine


# --- the Dockerfile, as a container runtime reads it -------------------------------------------------------------
@dataclass
class Recipe:
    """The instructions of a Dockerfile that decide how its container starts (the last one of each wins)."""

    env: dict[str, str] = field(default_factory=dict)
    workdir: str = "/"
    expose: list[int] = field(default_factory=list)
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    healthcheck: str = ""

    @property
    def argv(self) -> list[str]:
        """What the runtime executes: ENTRYPOINT followed by CMD."""
        return self.entrypoint + self.cmd


def instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` pairs, with comments dropped and ``\\`` continuations joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        if line.strip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, rest = pending.strip().partition(" ")
        out.append((keyword.upper(), rest.strip()))
        pending = ""
    return out


def exec_form(arguments: str) -> list[str]:
    """CMD/ENTRYPOINT arguments: the JSON exec form, or the shell form as Docker runs it (``/bin/sh -c``)."""
    return json.loads(arguments) if arguments.startswith("[") else ["/bin/sh", "-c", arguments]


def parse_dockerfile(text: str) -> Recipe:
    recipe = Recipe()
    for keyword, arguments in instructions(text):
        if keyword == "ENV":
            words = shlex.split(arguments)
            if "=" in words[0]:
                recipe.env.update(word.split("=", 1) for word in words)  # type: ignore[misc]
            else:  # the legacy `ENV KEY value` form
                recipe.env[words[0]] = arguments.split(None, 1)[1]
        elif keyword == "WORKDIR":
            recipe.workdir = arguments
        elif keyword == "EXPOSE":
            recipe.expose = [int(port.split("/")[0]) for port in arguments.split()]
        elif keyword == "ENTRYPOINT":
            recipe.entrypoint = exec_form(arguments)
        elif keyword == "CMD":
            recipe.cmd = exec_form(arguments)
        elif keyword == "RUN":
            recipe.runs.append(arguments)
        elif keyword == "HEALTHCHECK":
            recipe.healthcheck = arguments
    return recipe


@pytest.fixture(scope="module")
def recipe() -> Recipe:
    return parse_dockerfile(DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    return yaml.safe_load((ENV_DIR / "openenv.yaml").read_text())


# --- the folder and its manifest, as OpenEnv's CLI checks them ---------------------------------------------------
def test_openenv_validate_and_push_accept_the_folder() -> None:
    """``openenv validate`` (all four deployment modes) and ``openenv push``'s structure check, OpenEnv's own code."""
    from openenv.cli._cli_utils import validate_env_structure
    from openenv.cli._validation import get_deployment_modes, validate_multi_mode_deployment

    assert validate_multi_mode_deployment(ENV_DIR) == (True, [])
    assert get_deployment_modes(ENV_DIR) == {"docker": True, "openenv_serve": True, "uv_run": True,
                                             "python_module": True}
    warnings = validate_env_structure(ENV_DIR)  # raises FileNotFoundError naming a missing required file
    assert warnings == ["Recommended directory missing: outputs/"]  # a folder for run outputs, not needed here


def test_manifest_is_openenv_inits_with_our_name_and_agrees_with_the_dockerfile(
        manifest: dict[str, Any], recipe: Recipe) -> None:
    """The fields and values of the manifest ``openenv init`` writes (openenv/cli/templates/openenv_env/
    openenv.yaml, what build/push/AutoEnv read), but the name; its app and port are what the CMD serves."""
    import openenv.cli

    template = yaml.safe_load((Path(openenv.cli.__file__).parent / "templates" / "openenv_env" / "openenv.yaml")
                              .read_text())
    assert manifest.keys() == template.keys()
    assert {k: v for k, v in manifest.items() if k != "name"} == {k: v for k, v in template.items() if k != "name"}
    assert manifest["name"] == ENV_DIR.name  # `openenv build` tags the image after the folder, push after the name
    assert manifest["app"] == "server.app:app" and manifest["port"] == 8000

    command = " ".join(recipe.argv)
    assert f"uvicorn {manifest['app']} " in command, "the CMD serves another app than the manifest names"
    assert recipe.env["PORT"] == str(manifest["port"]) and recipe.expose == [manifest["port"]]
    assert "${PORT}" in command and "${PORT}" in recipe.healthcheck
    assert recipe.workdir == "/app/env" and any(r.startswith("pip install") for r in recipe.runs)


def test_the_image_installs_openenv_as_make_setup_does(recipe: Recipe) -> None:
    """The same openenv-core and fastmcp pins as the Makefile, openenv-core with --no-deps; Java 17 for ScienceWorld."""
    makefile = MAKEFILE.read_text()
    pins = set(re.findall(r"(openenv-core==[\w.]+|fastmcp-slim\[client\]==[\w.]+)", makefile))
    install = " ".join(recipe.runs)
    assert len(pins) == 2 and all(pin in install for pin in pins)
    assert "--no-deps -c dist/constraints.txt openenv-core==" in install
    assert "openjdk-17-jre-headless" in install


@pytest.mark.parametrize(("environ", "message"), [
    ({}, "DREAMER_GYM_ENV_ID is not set"),
    ({"DREAMER_GYM_ENV_ID": "x", "DREAMER_GYM_MAX_SESSIONS": "two"}, "DREAMER_GYM_MAX_SESSIONS to be an int >= 1"),
    ({"DREAMER_GYM_ENV_ID": "x", "DREAMER_GYM_MAX_SESSIONS": "0"}, "DREAMER_GYM_MAX_SESSIONS to be an int >= 1"),
    ({"DREAMER_GYM_ENV_ID": "x", "DREAMER_GYM_ENV_KWARGS": "{eval"}, "DREAMER_GYM_ENV_KWARGS to be a JSON object"),
    ({"DREAMER_GYM_ENV_ID": "x", "DREAMER_GYM_ENV_KWARGS": "[1]"}, "DREAMER_GYM_ENV_KWARGS to be a JSON object, got list"),
])
def test_a_bad_container_variable_is_named(environ: dict[str, str], message: str) -> None:
    from dreamer_gym.errors import ConfigError
    from dreamer_gym.remote.openenv_container import ContainerSettings

    with pytest.raises(ConfigError, match=re.escape(message)):
        ContainerSettings.from_environ(environ)


def test_container_settings_default_to_what_dreamer_gym_serve_defaults_to(recipe: Recipe) -> None:
    from dreamer_gym.remote.openenv_container import ContainerSettings

    settings = ContainerSettings.from_environ(recipe.env)
    assert settings.env_id == "MemoryConsolidation-ScienceWorld-v1"
    assert settings.max_sessions == 1 and settings.env_kwargs == {}


# --- the container's entry point, started as the container starts it --------------------------------------------
def copy_context(root: Path, recipe: Recipe) -> Path:
    """This folder at the recipe's WORKDIR under ``root`` (``COPY . /app/env``), without a staged dist/."""
    workdir = root / recipe.workdir.lstrip("/")
    shutil.copytree(ENV_DIR, workdir, ignore=shutil.ignore_patterns("dist", "__pycache__"))
    return workdir


def start_container_cmd(recipe: Recipe, workdir: Path, bindir: Path, overrides: dict[str, str]) -> Server:
    """The recipe's argv in ``workdir`` with only the image's variables plus ``overrides`` (``docker run -e``):
    PATH puts ``bindir`` first, where the image's pip puts uvicorn; HOME is empty, as in a fresh container."""
    home = workdir.parent / "home"
    home.mkdir()
    base = {"PATH": f"{bindir}{os.pathsep}/usr/local/bin:/usr/bin:/bin", "HOME": str(home)}

    def start(port: int) -> subprocess.Popen[bytes]:
        env = {**base, **recipe.env, **overrides, "PORT": str(port)}  # `docker run -e PORT=... -p ...`
        return subprocess.Popen(recipe.argv, env=env, cwd=workdir)

    return launch(start, timeout_s=CONTAINER_START_S)


def check_served_container(recipe: Recipe, server: Server) -> None:
    """OpenEnv's runtime validator passes, one keep-all episode plays over /ws, and ``docker stop`` (SIGTERM)
    leaves nothing running. Prints the validator's verdict and the episode (the issue's "must show")."""
    from openenv.cli._validation import validate_running_environment

    try:
        # `exec` in the CMD: the runtime's process is uvicorn itself, so `docker stop`'s SIGTERM reaches it
        assert "uvicorn" in Path(f"/proc/{server.process.pid}/cmdline").read_bytes().decode()

        report = validate_running_environment(server.url, timeout_s=60)
        print(json.dumps({"openenv_validate_url": {k: report[k] for k in ("passed", "standard_profile", "mode")},
                          "criteria": {c["id"]: c["passed"] for c in report["criteria"]}}))
        assert report["passed"], report
        assert report["mode"] == "simulation" and report["summary"]["failed_criteria"] == []

        with connect(server.url) as client:
            first = client.reset(seed=0)
            ids = [e["id"] for e in first.observation.info["region"]]
            kept = client.step(call("keep", ids=ids))
            result = client.step(call("commit"))
        info = result.observation.info
        served_id = {c["id"]: c for c in report["criteria"]}["metadata_endpoint"]["actual"]["name"]
        print(json.dumps({"episode": {"env_id": served_id, "family": info["family"], "entries": len(ids),
                                      "reward": result.reward, "done": result.done}}))
        assert served_id == recipe.env["DREAMER_GYM_ENV_ID"]  # the image's default id, as no -e changed it
        assert kept.reward == 0.0 and kept.observation.info["last_error"] is None
        assert result.done and result.observation.terminated and isinstance(result.reward, float)
        assert info["comparable"] is False  # DREAMER_GYM_ENV_KWARGS made it an experiment, and the commit says so
        assert {"score_before", "score_after", "reward_components"} <= info.keys()
    finally:
        below = descendants(server.process.pid)
        stop_server(server.process)  # `docker stop`: SIGTERM
    assert server.process.returncode in (0, -signal.SIGTERM)
    assert wait_gone(below, 30) == set(), "the container's server left processes behind"


@pytest.mark.jvm
def test_the_containers_cmd_passes_openenvs_runtime_validator_and_plays_an_episode(
        recipe: Recipe, tmp_path: Path) -> None:
    """The CMD with this interpreter's packages (the checkout's install) standing in for the image's."""
    workdir = copy_context(tmp_path, recipe)
    server = start_container_cmd(recipe, workdir, Path(sys.executable).parent,
                                 {"DREAMER_GYM_ENV_KWARGS": json.dumps(SMALL)})
    check_served_container(recipe, server)


@pytest.mark.heavy
@pytest.mark.jvm
def test_the_image_built_without_docker_serves(recipe: Recipe, tmp_path: Path) -> None:
    """The image, short of a Docker daemon: the context staged by ``make openenv-context`` (into a copy), the
    Dockerfile's ``pip`` RUN lines run as written in a fresh venv (the wheel, not the checkout; Java from the
    host, where the image gets it from apt), then the CMD as above. ~2 min to install, ~40 s to serve."""
    workdir = copy_context(tmp_path, recipe)
    subprocess.run(["make", "-o", "setup", "openenv-context", f"OPENENV_DIST={workdir / 'dist'}"], cwd=MAKEFILE.parent,
                   check=True, timeout=900)
    venv = tmp_path / "image-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    assert shutil.which("java"), "the image installs openjdk-17-jre-headless; here Java comes from the host"
    env = {"PATH": f"{venv / 'bin'}{os.pathsep}/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)}
    pip_runs = [run for run in recipe.runs if run.startswith("pip ")]
    assert pip_runs, "the Dockerfile installs nothing with pip"
    for run in pip_runs:
        subprocess.run(["/bin/sh", "-c", run], cwd=workdir, env=env, check=True, timeout=1800)
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import dreamer_gym; print(dreamer_gym.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True, timeout=120)
    assert where.stdout.startswith(str(venv)), where.stdout  # the wheel's copy, not the checkout
    server = start_container_cmd(recipe, workdir, venv / "bin", {"DREAMER_GYM_ENV_KWARGS": json.dumps(SMALL)})
    check_served_container(recipe, server)
