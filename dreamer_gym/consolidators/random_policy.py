"""The random consolidator: uniformly random *valid* tool calls, a floor that is not the empty region.

Every call is built from what the episode shows (``info["region"]``, the budget in the observation and
the new region so far in ``info["emitted"]``), so none is ever invalid: read a real entry; read a
linked trajectory inside one of its provenance ranges; search for a word of the region; keep a random
subset of real ids; emit a real entry's text (or a run of its words) with real ids as provenance; retract
a valid index. It makes a random number of such calls within the tool-call budget, then commits.
"""
from __future__ import annotations

import zlib
from collections.abc import Generator
from typing import Any

import gymnasium as gym
import numpy as np

from dreamer_gym.consolidators.base import call
from dreamer_gym.envs.tools import CHARS_PER_TOKEN
from dreamer_gym.memory import KINDS, MemoryEntry, Provenance, count_tokens


class RandomConsolidator:
    """Uniformly random valid tool calls, then ``commit``.

    Seeded: each episode's generator is seeded from ``seed`` and the region it is shown (its family and
    entry ids), so the same region always gets the same calls, whatever order episodes run in.

    Args:
        seed: the policy's seed.
        max_calls: at most this many calls before the commit (None: up to the episode's whole budget).

    Example::

        info = run_episode(env, RandomConsolidator(seed=0), seed=3)
        assert info["invalid_calls"] == 0
    """

    name = "random"

    def __init__(self, seed: int = 0, max_calls: int | None = None) -> None:
        self.seed = int(seed)
        self.max_calls = max_calls

    def rng_for(self, info: dict[str, Any]) -> np.random.Generator:
        """The episode's generator: from ``seed`` and the region shown."""
        region = str(info.get("family")) + "|" + ",".join(e["id"] for e in info["region"])
        return np.random.default_rng([self.seed, zlib.crc32(region.encode("utf-8"))])

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Generator[str, Any, None]:
        rng = self.rng_for(info)
        region: list[dict[str, Any]] = list(info["region"])
        calls_left = int(obs["budget"][0])
        if not region or calls_left <= 1:
            yield call("commit")
            return
        n = int(rng.integers(calls_left))  # 0 .. calls_left - 1 calls, then the commit
        if self.max_calls is not None:
            n = min(n, self.max_calls)
        max_tokens = int(env.unwrapped.config.max_entry_tokens)
        for _ in range(n):
            action = self._draw(rng, region, obs, info, max_tokens)
            sent = yield action
            if sent is not None:
                obs, info = sent
        yield call("commit")

    # --- one random valid call ---------------------------------------------------------------------------------
    def _draw(self, rng: np.random.Generator, region: list[dict[str, Any]], obs: dict[str, Any],
              info: dict[str, Any], max_tokens: int) -> str:
        emitted = list(info.get("emitted", ()))
        options = ["read_entry", "search", "keep"]
        if any(e["provenance"] for e in region):
            options.append("read_trajectory")
        if int(obs["budget"][1]) > 0:
            options.append("emit")
        if emitted:
            options.append("retract")
        while True:
            tool = options[int(rng.integers(len(options)))]
            action = getattr(self, f"_{tool}")(rng, region, info, emitted, max_tokens)
            if action is not None:
                return action
            options.remove(tool)  # only `emit` can fail to find a valid call; read_entry always remains

    @staticmethod
    def _pick(rng: np.random.Generator, items: list[Any]) -> Any:
        return items[int(rng.integers(len(items)))]

    def _read_entry(self, rng: np.random.Generator, region: list[dict[str, Any]], *_: Any) -> str:
        return call("read_entry", id=self._pick(rng, region)["id"])

    def _read_trajectory(self, rng: np.random.Generator, region: list[dict[str, Any]], *_: Any) -> str:
        prov = self._pick(rng, [p for e in region for p in e["provenance"]])
        start = int(rng.integers(prov["start"], prov["end"] + 1))
        end = int(rng.integers(start, prov["end"] + 1))
        return call("read_trajectory", id=prov["trajectory_id"], start=start, end=end)

    def _search(self, rng: np.random.Generator, region: list[dict[str, Any]], *_: Any) -> str:
        words = [w for e in region for w in e["text"].split()] or ["memory"]
        return call("search", query=self._pick(rng, words), k=int(rng.integers(1, 11)))

    def _keep(self, rng: np.random.Generator, region: list[dict[str, Any]], *_: Any) -> str:
        ids = [e["id"] for e in region]
        size = int(rng.integers(1, len(ids) + 1))
        return call("keep", ids=[ids[i] for i in sorted(rng.choice(len(ids), size=size, replace=False))])

    def _retract(self, rng: np.random.Generator, region: list[dict[str, Any]], info: dict[str, Any],
                 emitted: list[dict[str, Any]], *_: Any) -> str:
        return call("retract", index=int(rng.integers(len(emitted))))

    def _emit(self, rng: np.random.Generator, region: list[dict[str, Any]], info: dict[str, Any],
              emitted: list[dict[str, Any]], max_tokens: int) -> str | None:
        """A real entry's text, or a run of its words, under a random kind with real ids as provenance; None
        when a few draws all collide with an entry already in the region or the new region."""
        taken = {e["id"] for e in region} | {e["id"] for e in emitted}
        by_id = {e["id"]: e for e in region}
        for _ in range(8):
            words = self._pick(rng, region)["text"].split()
            if not words:
                continue
            if rng.random() < 0.5:  # a slice of the text
                start = int(rng.integers(len(words)))
                words = words[start: start + int(rng.integers(1, len(words) - start + 1))]
            text = " ".join(words)
            while words and (count_tokens(text) > max_tokens or len(text) > max_tokens * CHARS_PER_TOKEN):
                words = words[: len(words) // 2]
                text = " ".join(words)
            if not text:
                continue
            ids = [e["id"] for e in region]
            prov_ids = [ids[i] for i in sorted(rng.choice(len(ids), size=int(rng.integers(1, min(3, len(ids)) + 1)),
                                                          replace=False))]
            kind = self._pick(rng, list(KINDS))
            provenance = {Provenance.from_dict(p) for i in prov_ids for p in by_id[i]["provenance"]}
            if MemoryEntry(kind, text, str(info["family"]), provenance=tuple(provenance)).id in taken:
                continue
            return call("emit", kind=kind, text=text, provenance=prov_ids)
        return None
