"""Shared fixtures for the dreamer_gym test suite.

Everything here is real: the frozen bank pool shipped as package data, real SQLite stores, real
ScienceWorld JVMs. JVMs are expensive on this 2-core machine (2-4 s each), so the fixtures that start
one are session- or module-scoped and shared.
"""
from __future__ import annotations

import os
import signal
import warnings
from collections.abc import Iterator

import gymnasium as gym
import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.contract.ids import LATEST_IDS, REGISTERED
from dreamer_gym.pool import BankPool, load_pool

from helpers import make_env

# before any test module imports torch (nothing above does): spinning OpenMP waits make CPU generation ~9x
# slower on a busy machine (docs/llm.md, "Measured rates"); the transformers backend can only set this
# when torch comes after it
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# ScienceWorld ids rewarded by the memory-following agent, at their latest version: the generic env tests
# (written against the ScienceWorld pool) run on these. A superseded version (-v0) differs only in the tool
# contract, tested once in tests/envs/test_toolspec.py. The LLM-agent ids (same env, slower reward) are tested
# in tests/envs/test_llm_env.py; the held-out suites' ids in tests/envs/test_heldout_envs.py. The window-region id
# (`...ScienceWorldWindows-v0`: other region keys, no `family` option, its own pool) in tests/envs/test_windows_id.py.
ENV_IDS: list[str] = sorted(
    i for i, kw in REGISTERED.items() if i in LATEST_IDS and kw["reward_agent"] == "memory" and kw["suite"] == "scienceworld"
    and kw["pool"] == "scienceworld-v0"
)


# --- pytest-xdist: `make test TEST_WORKERS=2` runs `-n 2 --dist loadfile` (docs/performance.md, "CI time") ---
# Modules that share a session-scoped engine run on one worker, one after the other: the LLM tests' HeavyEngines
# registry (tests/llm/conftest.py) keeps one vLLM engine or server alive per process, and two vLLM starts at once
# would cost ~60 s of both cores each. (xdist_group marks cannot do this here: pytest 9.2 ignores the node ids
# pytest-xdist 3.8's `--dist loadgroup` rewrites, so every test became its own unit.)
XDIST_SHARED_WORKER: dict[str, str] = {"tests/llm/": "llm-engines", "tests/test_verifiers_env.py": "llm-engines"}


@pytest.hookimpl(optionalhook=True)  # a known hook only where pytest-xdist is installed
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadfile``, with the modules of :data:`XDIST_SHARED_WORKER` gathered into one unit each."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedEngineFileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return next((unit for prefix, unit in XDIST_SHARED_WORKER.items() if path.startswith(prefix)), path)

    return SharedEngineFileScheduling(config, log)


# --- fixtures ----------------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _sigint_left_as_found(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that leaves SIGINT ignored makes every later subprocess ignore Ctrl-C (an ignored signal is inherited
    across exec): the handler is put back after each test and the test is named in a warning (issue 39: in a full
    session something leaves it ignored; the Ctrl-C tests start their command with SIGINT at its default)."""
    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after != before:
        signal.signal(signal.SIGINT, before if before is not None else signal.default_int_handler)
        warnings.warn(f"{request.node.nodeid} left SIGINT as {after!r} (put back to {before!r})", stacklevel=1)


@pytest.fixture(scope="session")
def pool() -> BankPool:
    """The frozen ScienceWorld bank pool (package data, hash-pinned)."""
    return load_pool("scienceworld-v0", REGISTERED["MemoryConsolidation-ScienceWorld-v0"]["pool_hash"])


@pytest.fixture(scope="session", params=ENV_IDS, ids=ENV_IDS)
def env_id(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="session")
def shared_env(env_id: str) -> Iterator[gym.Env]:
    """One small env per registered id for the whole session (its JVM starts at the first commit)."""
    env = make_env(env_id)
    yield env
    env.close()


@pytest.fixture(scope="session")
def smollm2_backend():
    """The real SmolLM2-135M-Instruct on the transformers backend, shared by the agent, consolidator
    and CLI tests (loading it costs ~3 s and 600 MB; converting the wheel's GGUF once, ~10 s)."""
    from dreamer_gym.llm import LLMConfig, make_backend

    backend = make_backend(LLMConfig(backend="transformers", max_context=4096))
    yield backend
    backend.close()
