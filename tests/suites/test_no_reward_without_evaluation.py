"""No reward without a real evaluation: an id whose simulator, browser or model stack is missing fails at
``gym.make``, naming the extra; a commit whose episodes did not run raises ``EvaluationFailed`` instead of paying
the size term of a score that was never measured; the leaderboard refuses a re-score with episode errors."""
from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dreamer_gym.envs.consolidation import ConsolidationEnv
from dreamer_gym.errors import EvaluationFailed, RewardServiceError
from dreamer_gym.pool import build_pool
from dreamer_gym.suites import StepOutcome, SuiteSpec, make_suite, register_suite

import toy_suite

# A real run of `gym.make` in a fresh interpreter where some top-level modules cannot be imported (as after a
# `pip install` without their extra): a meta-path finder refuses them, so find_spec and import both fail.
BLOCKED_MAKE = textwrap.dedent("""
    import sys
    BLOCKED = set(sys.argv[2].split(","))

    class Refuse:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
            return None

    sys.meta_path.insert(0, Refuse())
    import gymnasium as gym
    import dreamer_gym
    try:
        gym.make(sys.argv[1])
    except Exception as exc:
        print("RAISED", type(exc).__name__, exc)
    else:
        print("MADE")
""")


def make_without(env_id: str, *modules: str) -> str:
    done = subprocess.run([sys.executable, "-c", BLOCKED_MAKE, env_id, ",".join(modules)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(("env_id", "blocked", "extra"), [
    ("MemoryConsolidation-ALFWorldGen-v0", ("alfworld", "textworld"), "alfworld"),
    ("MemoryConsolidation-MiniWoB-v0", ("browsergym", "miniwob"), "web"),
    ("MemoryConsolidation-ScienceWorld-v0", ("scienceworld",), "scienceworld"),
    ("MemoryConsolidation-ScienceWorld-LLM-v0", ("torch",), "llm"),
    ("MemoryConsolidation-ALFWorldGen-LLM-v0", ("transformers",), "llm"),
    ("MemoryConsolidation-MiniWoB-LLM-v0", ("torch", "transformers"), "llm"),
])
def test_make_fails_at_once_naming_the_extra_when_it_is_missing(env_id: str, blocked: tuple[str, ...],
                                                                extra: str) -> None:
    line = make_without(env_id, *blocked)
    assert line.startswith("RAISED DependencyNotInstalled"), line
    assert f'dreamer-gym[{extra}]' in line, line


def test_make_succeeds_with_the_extra_installed() -> None:
    assert make_without("MemoryConsolidation-ALFWorldGen-v0", "nothing-blocked") == "MADE"


class DevCrashingToy(toy_suite.ToySuite):
    """The toy game whose simulator dies on every step of a DEV variation (the split the reward plays), as a
    JVM or a browser can: acquisition (TRAIN) works, every evaluation episode fails."""

    name = "toy-dev-crash"

    def step(self, action: str) -> StepOutcome:
        if self._task is not None and self._task.variation >= 100:
            raise RuntimeError("the simulator died")
        return super().step(action)


CRASHING = SuiteSpec(name="toy-dev-crash", adapter=DevCrashingToy, families=toy_suite.FAMILIES,
                     profile=toy_suite.SPEC.profile, procedures=toy_suite.SPEC.procedures, agent_max_steps=8)


@pytest.fixture(scope="module")
def crashing_pool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    register_suite(CRASHING)
    pool = build_pool(make_suite(CRASHING.name), toy_suite.FAMILIES, seeds=(0,), eval_variations=4, gold_variations=2)
    path = tmp_path_factory.mktemp("crash") / "toy-dev-crash-v0.json.gz"
    pool.save(path)
    return path


@pytest.mark.parametrize(("first", "service"), [("keep", "inprocess"), ("commit", "inprocess"), ("keep", "process")])
def test_a_commit_whose_episodes_did_not_run_raises_instead_of_paying(crashing_pool: Path, first: str,
                                                                     service: str) -> None:
    env = ConsolidationEnv(suite=CRASHING.name, pool=str(crashing_pool), eval_in_family=2, eval_other=0,
                           service=service, store_path=":memory:")
    try:
        _, info = env.reset(seed=0)
        if first == "keep":
            env.step(json.dumps({"tool": "keep", "ids": [e["id"] for e in info["region"]]}))
        with pytest.raises(EvaluationFailed, match=r"4 of 4 evaluation episodes did not run.*the simulator died") as raised:
            env.step(json.dumps({"tool": "commit"}))
        assert raised.value.errors == ("RuntimeError: the simulator died",)  # each reason once
        with pytest.raises(RuntimeError, match="call reset"):  # the episode is void: nothing was scored
            env.step(json.dumps({"tool": "commit"}))
        env.reset(seed=1)  # and the env goes on
    finally:
        env.close()


def test_evaluation_failed_keeps_its_reasons_across_the_service_process_boundary() -> None:
    exc = pickle.loads(pickle.dumps(EvaluationFailed("2 of 2 episodes did not run", ("A: x", "B: y"))))
    assert isinstance(exc, RewardServiceError) and exc.errors == ("A: x", "B: y") and "did not run" in str(exc)
