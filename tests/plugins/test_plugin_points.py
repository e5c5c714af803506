"""Every plug-in point opens from outside the package: an executor, an LLM backend and a downstream agent, each
in a module in ``tmp_path`` with a real ``.dist-info`` entry point, run by name from the CLI in a fresh
interpreter. Nothing inside ``dreamer_gym/`` is edited and nothing is registered in this process: the CLI (and
the reward service process it starts) find each plug-in through ``importlib.metadata`` only.

The plug-ins are real components: the executor is the in-process one that also writes what it played, the agent
the memory-following one played without its memory, the backend a deterministic Python model implementing the
:class:`~dreamer_gym.llm.LLMBackend` protocol (what is under test is the registry path, not a model). Each writes a
log the test reads, so "it ran" is asserted from the plug-in's side as well as from the CLI's table.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_dist import run_cli, write_dist

# one ScienceWorld family (the oracle's memory takes the memory-following agent from 9 to 100 on it), one DEV
# episode per commit: a JVM and a few seconds per run
SMALL = ["--families", "grow-plant", "--eval-in-family", "1", "--eval-other", "0", "--quiet"]

EXECUTOR = '''
import json, os
from dreamer_gym.evaluation import InProcessExecutor

class LoggingExecutor(InProcessExecutor):
    """The in-process executor, writing one line per episode it plays."""

    def run(self, tasks, on_result=None):
        results = super().run(tasks, on_result)
        with open(os.environ["PLUGIN_LOG"], "a") as log:
            for task, result in zip(tasks, results):
                log.write(json.dumps({"family": task.task.family, "score": result.score, "pid": os.getpid()}) + "\\n")
        return results

def build(spec, suite_kwargs, agent_config, *, workers, max_restarts, agent, **options):
    return LoggingExecutor(spec, suite_kwargs, agent_config, agent=agent)
'''

AGENT = '''
import json, os
from dreamer_gym.agents import MemoryFollowingAgent

class NoMemoryAgent:
    """The memory-following agent, played without the entries retrieved for it: memory cannot change its score."""

    def __init__(self, config):
        self.config = config
        self.inner = MemoryFollowingAgent(config)

    @property
    def cache_key(self):
        return "no-memory/" + self.inner.cache_key

    def retrieve(self, description, entries, index_key=None):
        return self.inner.retrieve(description, entries, index_key)

    def play(self, suite, task, entries, seed=0):
        result = self.inner.play(suite, task, (), seed)
        with open(os.environ["PLUGIN_LOG"], "a") as log:
            log.write(json.dumps({"family": task.family, "score": result.score, "offered": len(entries)}) + "\\n")
        return result
'''

BACKEND = '''
import json, os
from dreamer_gym.llm import Completion

class CommitBackend:
    """A deterministic model that answers every turn with a commit (an empty new region)."""

    name = "commit-only"

    def __init__(self, config):
        self.model, self.max_context = config.model, config.max_context

    @classmethod
    def from_config(cls, config):
        return cls(config)

    def generate(self, conversations, sampling):
        with open(os.environ["PLUGIN_LOG"], "a") as log:
            log.write(json.dumps({"model": self.model, "turns": len(conversations), "n": sampling.n}) + "\\n")
        return [[Completion('{"tool": "commit"}', completion_tokens=4) for _ in range(sampling.n)]
                for _ in conversations]

    def count_tokens(self, conversation):
        return sum(len(m["content"]) // 4 for m in conversation)

    def close(self):
        pass
'''


def _install(tmp_path: Path, module: str, source: str, group: str, name: str, ref: str) -> Path:
    return write_dist(tmp_path / "site", f"{module.replace('_', '-')}", {f"{module}.py": source}, {group: {name: ref}})


def _log(path: Path) -> list[dict[str, object]]:
    assert path.exists(), "the plug-in never ran: no log"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _row(stdout: str, consolidator: str) -> dict[str, str]:
    """The table row of ``consolidator``, column -> cell."""
    lines = [line for line in stdout.splitlines() if "|" in line]
    header = [c.strip() for c in lines[0].split("|")]
    [row] = [[c.strip() for c in line.split("|")] for line in lines[1:] if line.split("|")[0].strip() == consolidator]
    return dict(zip(header, row))


@pytest.mark.jvm
def test_an_executor_and_a_downstream_agent_installed_as_entry_points_play_and_score(tmp_path: Path) -> None:
    """Two CLI runs of the oracle on one site holding both plug-ins: with ``--reward-agent no-memory`` the plug-in
    agent scores (the oracle's bank cannot move it), and without it the built-in agent does (the same bank scores
    higher); the plug-in executor plays every episode of both runs."""
    site = _install(tmp_path, "my_executor", EXECUTOR, "dreamer_gym.executors", "logged", "my_executor:build")
    _install(tmp_path, "my_agent", AGENT, "dreamer_gym.agents", "no-memory", "my_agent:NoMemoryAgent")
    log = tmp_path / "played.jsonl"

    def lines(kind: str) -> list[dict[str, object]]:  # the executor's lines carry a pid, the agent's "offered"
        return [x for x in _log(log) if kind in x]

    proc = run_cli(site, "consolidate", "--consolidator", "oracle", "--executor", "logged", "--reward-agent",
                   "no-memory", *SMALL, PLUGIN_LOG=str(log))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "no-memory agent" in proc.stdout  # the header names the reward agent
    played = lines("offered")
    assert len(played) == 2 and {p["family"] for p in played} == {"grow-plant"}  # the bank before, and after
    assert all(int(p["offered"]) > 0 for p in played)  # it was offered memory, and played without it
    assert [p["score"] for p in lines("pid")] == [p["score"] for p in played]  # the plug-in executor played them
    row = _row(proc.stdout, "oracle")
    assert row["score before"] == row["score after"]  # the oracle's bank cannot move an agent that ignores memory
    assert float(row["score before"]) == pytest.approx(played[0]["score"], abs=0.05)
    # ... while the same command with the built-in agent scores the oracle's bank higher: the plug-in did the scoring
    builtin = run_cli(site, "consolidate", "--consolidator", "oracle", "--executor", "logged", *SMALL,
                      PLUGIN_LOG=str(log))
    assert builtin.returncode == 0, builtin.stderr[-3000:]
    row = _row(builtin.stdout, "oracle")
    assert float(row["score after"]) > float(row["score before"])
    assert len(lines("offered")) == 2  # the built-in run did not go through the plug-in agent ...
    executed = lines("pid")[2:]  # ... but through the plug-in executor: the bank before and after, one episode each
    assert [p["family"] for p in executed] == ["grow-plant"] * 2
    assert float(row["score before"]) == pytest.approx(executed[0]["score"], abs=0.05)


@pytest.mark.jvm
def test_an_llm_backend_installed_as_an_entry_point_drives_the_prompted_consolidator(tmp_path: Path) -> None:
    site = _install(tmp_path, "my_backend", BACKEND, "dreamer_gym.llm_backends", "commit-only",
                    "my_backend:CommitBackend.from_config")
    log = tmp_path / "calls.jsonl"
    proc = run_cli(site, "consolidate", "--consolidator", "prompted", "--backend", "commit-only", "--model",
                   "scripted-v1", *SMALL, PLUGIN_LOG=str(log))
    assert proc.returncode == 0, proc.stderr[-3000:]
    calls = _log(log)
    assert calls == [{"model": "scripted-v1", "turns": 1, "n": 1}]  # built from the CLI's LLM flags, asked once
    row = _row(proc.stdout, "prompted")
    assert float(row["entries before"]) > 0 and row["entries after"] == "0.0"  # its commit emptied the region
    assert row["valid calls"] == "1.00" and "failed" not in row
