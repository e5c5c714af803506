"""What a small LLM does on both sides of the benchmark, measured on real ScienceWorld.

1. The prompted consolidator, with and without guided decoding, on the same regions: reward, the
   share of valid tool calls, what it left in the region.
2. The LLM agent next to the memory-following agent on the same DEV episodes with the same retrieved
   entries (raw banks, and the oracle's consolidated banks): mean score and success.

``python -m research.llm_study --out runs/llm_study`` writes ``summary.json`` and prints markdown
tables (docs/llm.md quotes them). Every number comes from one run; nothing is estimated.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
from tqdm.auto import tqdm

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.agents import AgentConfig
from dreamer_gym.consolidators.base import run_episode
from dreamer_gym.consolidators.oracle import OracleConsolidator
from dreamer_gym.consolidators.prompted import PromptedConsolidator
from dreamer_gym.evaluation import EvalEpisode, Evaluator
from dreamer_gym.llm import LLMConfig, make_backend
from dreamer_gym.suites.base import EpisodeTask


@dataclass(frozen=True)
class LLMStudyConfig:
    families: tuple[str, ...] = ("use-thermometer", "power-component", "find-non-living-thing")
    seeds: tuple[int, ...] = (0, 1)
    region_entries: int = 8
    tool_calls: int = 8
    eval_in_family: int = 2
    eval_other: int = 1
    agent_episodes_per_family: int = 2
    agent_max_steps: int = 15
    llm: LLMConfig = field(default_factory=LLMConfig)


def _consolidator_part(cfg: LLMStudyConfig, backend: Any, progress: bool) -> dict[str, Any]:
    env = gym.make("MemoryConsolidation-ScienceWorld-v0", max_region_entries=cfg.region_entries,
                   max_tool_calls=cfg.tool_calls, eval_in_family=cfg.eval_in_family, eval_other=cfg.eval_other)
    out: dict[str, Any] = {}
    try:
        jobs = [(g, f, s) for g in (True, False) for f in cfg.families for s in cfg.seeds]
        for guided, family, seed in tqdm(jobs, desc="prompted consolidator", disable=not progress):
            policy = PromptedConsolidator(backend=backend, guided=guided)
            started = time.monotonic()
            info = run_episode(env, policy, seed=seed, options={"family": family})
            calls = cfg.tool_calls - int(info["tool_calls_left"])
            out.setdefault("guided" if guided else "unguided", []).append({
                "family": family, "seed": seed, "reward": info["return"], "score_before": info["score_before"],
                "score_after": info["score_after"], "entries_before": info["size_before"]["entries"],
                "entries_after": info["size_after"]["entries"], "tool_calls": calls,
                "invalid_calls": info["invalid_calls"], "llm_calls": policy.stats.calls,
                "unparsed": policy.stats.unparsed, "seconds": time.monotonic() - started,
            })
    finally:
        env.close()
    return out


def _agent_part(cfg: LLMStudyConfig, backend: Any, progress: bool) -> list[dict[str, Any]]:
    """Both agents on the same episodes and banks: pool bank 0 raw, and bank 0 with the episode's family
    region rewritten by the oracle (one rewrite per family, through the env)."""
    from dreamer_gym.agents.llm_agent import LLMAgent

    env = gym.make("MemoryConsolidation-ScienceWorld-v0", eval_in_family=1, eval_other=0)
    try:
        pool = env.unwrapped.pool
        raw = pool.banks[0]
        oracle_banks = {}
        for family in cfg.families:
            info = run_episode(env, OracleConsolidator(), seed=0, options={"family": family, "bank": 0})
            oracle_banks[family] = env.unwrapped.store.get_bank(info["bank_after"])
    finally:
        env.close()
    memory = Evaluator(agent_config=AgentConfig(max_steps=cfg.agent_max_steps))
    llm = Evaluator(agent_config=AgentConfig(name="llm", max_steps=cfg.agent_max_steps, llm=cfg.llm))
    llm.agent = LLMAgent(llm.agent_config, backend=backend)  # share the loaded model
    rows = []
    try:
        jobs = [(label, family) for label in ("raw", "oracle") for family in cfg.families]
        for label, family in tqdm(jobs, desc="agents", disable=not progress):
            bank = raw if label == "raw" else oracle_banks[family]
            episodes = [EvalEpisode(EpisodeTask(family, v), pool.description(EpisodeTask(family, v), "dev"))
                        for v in pool.variations(family, "dev")[: cfg.agent_episodes_per_family]]
            for name, ev in (("memory-following", memory), ("llm", llm)):
                for ep, result in zip(episodes, ev.evaluate(bank, episodes)):
                    rows.append({"bank": label, "agent": name, "family": family, "variation": ep.task.variation,
                                 "score": result.score, "success": result.success, "steps": result.steps,
                                 "error": result.error})
    finally:
        memory.close()
        llm.close()
    return rows


def run(cfg: LLMStudyConfig, out: Path | None = None, progress: bool = True) -> dict[str, Any]:
    backend = make_backend(cfg.llm)
    try:
        consolidator = _consolidator_part(cfg, backend, progress)
        agents = _agent_part(cfg, backend, progress)
    finally:
        backend.close()
    summary = {"config": asdict(cfg), "consolidator": consolidator, "agents": agents, "tables": tables(consolidator, agents)}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def tables(consolidator: dict[str, Any], agents: list[dict[str, Any]]) -> str:
    lines = ["| prompted consolidator | regions | reward | score before → after | valid tool calls | "
             "entries before → after | s per region |", "|---|---|---|---|---|---|---|"]
    for mode, runs in consolidator.items():
        calls = sum(r["tool_calls"] for r in runs)
        valid = 1 - sum(r["invalid_calls"] for r in runs) / max(calls, 1)
        lines.append(
            f"| {mode} | {len(runs)} | {_mean([r['reward'] for r in runs]):+.3f} | "
            f"{_mean([r['score_before'] for r in runs]):.1f} → {_mean([r['score_after'] for r in runs]):.1f} | "
            f"{valid:.0%} ({calls - sum(r['invalid_calls'] for r in runs)}/{calls}) | "
            f"{_mean([r['entries_before'] for r in runs]):.1f} → {_mean([r['entries_after'] for r in runs]):.1f} | "
            f"{_mean([r['seconds'] for r in runs]):.0f} |")
    lines += ["", "| bank | agent | episodes | mean score | success | mean steps |", "|---|---|---|---|---|---|"]
    keys = sorted({(r["bank"], r["agent"]) for r in agents}, key=lambda k: (k[0] != "raw", k[1]))
    for bank, agent in keys:
        rows = [r for r in agents if r["bank"] == bank and r["agent"] == agent]
        lines.append(f"| {bank} | {agent} | {len(rows)} | {_mean([r['score'] for r in rows]):.1f} | "
                     f"{_mean([float(r['success']) for r in rows]):.0%} | {_mean([r['steps'] for r in rows]):.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/llm_study"))
    parser.add_argument("--backend", default="transformers")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    cfg = LLMStudyConfig(llm=LLMConfig(backend=args.backend, model=args.model, base_url=args.base_url))
    summary = run(cfg, args.out, progress=not args.quiet)
    print(summary["tables"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
