"""The command line, run as a real subprocess: LLM flags, the JSON record, and no API key anywhere."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SECRET = "sk-test-DO-NOT-LEAK-0123456789"
SMALL = ["--families", "use-thermometer", "--episodes", "1", "--other", "0", "--quiet"]


def dreamer_gym(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dreamer_gym.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_unreachable_server_is_a_recorded_failure_and_the_key_never_leaks(tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    proc = dreamer_gym("-v", "evaluate", "--consolidator", "prompted", "--backend", "openai", "--model", "m",
                       "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "DG_TEST_KEY", "--timeout", "3",
                       "--out", str(out), *SMALL, env={"DG_TEST_KEY": SECRET}, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    record = json.loads(out.read_text())
    [run] = record["runs"]
    assert "LLMError" in run["error"] and "127.0.0.1:9" in run["error"]
    assert record["llm"]["api_key_env"] == "DG_TEST_KEY"
    for text in (proc.stdout, proc.stderr, out.read_text()):
        assert SECRET not in text


@pytest.mark.jvm
def test_evaluate_with_the_llm_reward_agent_writes_a_record(tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    proc = dreamer_gym("evaluate", "--consolidator", "keep-all", "--reward-agent", "llm", "--agent-max-steps", "2",
                       "--out", str(out), *SMALL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "LLM agent (smollm2-135m)" in proc.stdout
    record = json.loads(out.read_text())
    assert record["reward_agent"] == "llm" and record["agent_llm"]["backend"] == "transformers"
    [run] = record["runs"]
    assert run["return"] == 0.0  # keep-all: the same bank before and after
    assert len(run["episodes"]) == 1 and 0.0 <= run["episodes"][0]["before"] <= 100.0


def test_unknown_consolidator_is_a_clear_error() -> None:
    proc = dreamer_gym("evaluate", "--consolidator", "magic", *SMALL, timeout=60)
    assert proc.returncode != 0 and "unknown consolidator 'magic'" in proc.stderr


@pytest.mark.jvm
@pytest.mark.alfworld
@pytest.mark.browser
def test_transfer_track_runs_every_suite_it_can_and_names_why_not_the_others(tmp_path: Path) -> None:
    """One consolidator set, unchanged, on ScienceWorld, ALFWorldGen and MiniWoB; the official ALFWorld
    and WebArena ids are listed with the reason they cannot run here."""
    out = tmp_path / "transfer.json"
    env = {"ALFWORLD_DATA": str(tmp_path / "no-alfworld")} | {k: "" for k in ("WA_SHOPPING", "WA_REDDIT")}
    proc = dreamer_gym("evaluate", "--track", "transfer", "--consolidator", "keep-all,oracle", "--seeds", "0",
                       "--episodes", "1", "--other", "0", "--max-families", "1", "--quiet", "--out", str(out),
                       env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["settings"] == {"episodes": 1, "other": 0, "region_entries": 0, "max_tool_calls": 0,
                                  "max_families": 1, "reward_agent": "memory", "workers": 0}
    suites = record["suites"]
    ran = [i for i, s in suites.items() if "rows" in s]
    assert ran == ["MemoryConsolidation-ScienceWorld-v0", "MemoryConsolidation-ALFWorldGen-v0",
                   "MemoryConsolidation-MiniWoB-v0"]
    for env_id in ran:
        keep, oracle = suites[env_id]["rows"]
        assert keep["consolidator"] == "keep-all" and keep["reward"] == "+0.000" and keep["compression"] == "1.0x"
        assert oracle["consolidator"] == "oracle" and float(oracle["entries after"]) < float(oracle["entries before"])
        assert env_id in proc.stdout
    assert "alfworld-download" in suites["MemoryConsolidation-ALFWorld-v0"]["unavailable"]
    assert "WA_SHOPPING" in suites["MemoryConsolidation-WebArena-v0"]["unavailable"]
    assert "not run here" in proc.stdout
