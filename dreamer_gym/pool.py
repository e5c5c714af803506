"""The frozen, hash-pinned pool of banks that the env draws from.

Built once by :func:`build_pool` (real acquisition on real ScienceWorld) and shipped as package data,
so `gym.make` on a fresh machine never replays acquisition. The pool also carries the task texts of
the evaluation variations (retrieval needs them before any simulator starts) and the train gold
paths the oracle consolidator abstracts from.
"""
from __future__ import annotations

import gzip
import json
import logging
import os
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from dreamer_gym.acquisition import AcquisitionConfig, acquire, plan_episodes
from dreamer_gym.errors import PoolHashMismatch
from dreamer_gym.memory import MemoryBank, RegionScheme, Trajectory
from dreamer_gym.memory.hashing import content_hash
from dreamer_gym.paths import cache_root
from dreamer_gym.suites.base import EpisodeTask, TaskSuite

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BankPool:
    suite: str
    families: tuple[str, ...]
    banks: tuple[MemoryBank, ...]
    trajectories: dict[str, Trajectory]
    task_texts: dict[str, dict[str, dict[int, str]]]  # split -> family -> variation -> text
    train_gold: dict[str, dict[int, tuple[str, ...]]]  # family -> variation -> gold path
    seeds: tuple[int, ...]
    # how the banks are cut into working regions (memory/regions.py); the -v0/-v1 pools cut by family
    region_scheme: RegionScheme = field(default_factory=RegionScheme)
    # per bank, who wrote it (writer skill, run length, the task mix the agent met): JSON-able, hashed
    bank_meta: tuple[dict[str, Any], ...] = ()

    @property
    def hash(self) -> str:
        content: dict[str, Any] = {
            "suite": self.suite,
            "families": list(self.families),
            "banks": [b.hash for b in self.banks],
            "trajectories": sorted(self.trajectories),
            "tasks": {s: {f: sorted(v.items()) for f, v in fam.items()} for s, fam in self.task_texts.items()},
        }
        # hashed only when set, so the pools built before either existed keep their pinned hashes
        if self.region_scheme != RegionScheme():
            content["regions"] = self.region_scheme.to_dict()
        if self.bank_meta:
            content["bank_meta"] = list(self.bank_meta)
        return "p" + content_hash(content, length=16)

    def region_keys(self, bank_index: int) -> tuple[str, ...]:
        """The region keys of one bank under this pool's scheme (families, or ``window:A-B``)."""
        return self.region_scheme.keys(self.banks[bank_index])

    def description(self, task: EpisodeTask, split: str) -> str:
        return self.task_texts[split][task.family][task.variation]

    def variations(self, family: str, split: str) -> tuple[int, ...]:
        return tuple(sorted(self.task_texts[split].get(family, {})))

    def to_dict(self) -> dict[str, Any]:
        return {
            "hash": self.hash,
            "suite": self.suite,
            "families": list(self.families),
            "seeds": list(self.seeds),
            "banks": [b.to_dict() for b in self.banks],
            "trajectories": [t.to_dict() for t in sorted(self.trajectories.values(), key=lambda t: t.id)],
            "task_texts": {s: {f: {str(v): t for v, t in sorted(d.items())} for f, d in fam.items()}
                           for s, fam in self.task_texts.items()},
            "train_gold": {f: {str(v): list(p) for v, p in sorted(d.items())} for f, d in self.train_gold.items()},
            **({"region_scheme": self.region_scheme.to_dict()} if self.region_scheme != RegionScheme() else {}),
            **({"bank_meta": list(self.bank_meta)} if self.bank_meta else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BankPool:
        pool = cls(
            suite=data["suite"],
            families=tuple(data["families"]),
            banks=tuple(MemoryBank.from_dict(b) for b in data["banks"]),
            trajectories={t["id"]: Trajectory.from_dict(t) for t in data["trajectories"]},
            task_texts={s: {f: {int(v): t for v, t in d.items()} for f, d in fam.items()}
                        for s, fam in data["task_texts"].items()},
            train_gold={f: {int(v): tuple(p) for v, p in d.items()} for f, d in data["train_gold"].items()},
            seeds=tuple(data["seeds"]),
            region_scheme=RegionScheme(**data.get("region_scheme", {})),
            bank_meta=tuple(data.get("bank_meta", ())),
        )
        if data.get("hash") and data["hash"] != pool.hash:
            raise PoolHashMismatch(f"pool file says {data['hash']} but its content hashes to {pool.hash}")
        return pool

    def save(self, path: str | Path) -> None:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, sort_keys=True, separators=(",", ":"))


def cached_pool_path(name: str) -> Path:
    """Where a pool built on this machine (not shipped) is kept: ``$DREAMER_GYM_CACHE/pools/<name>.json.gz``."""
    return cache_root() / "pools" / f"{name}.json.gz"


def load_pool(name: str, expected_hash: str | None = None) -> BankPool:
    """Load a shipped pool (``dreamer_gym/data/<name>.json.gz``), one built on this machine
    (:func:`cached_pool_path`) or a path, checking its pinned hash."""
    path = Path(name)
    if not path.exists():
        path = Path(str(resources.files("dreamer_gym") / "data" / f"{name}.json.gz"))
    if not path.exists():
        path = cached_pool_path(name)
    if not path.exists():
        raise FileNotFoundError(f"No bank pool {name!r}: build it with `dreamer-gym acquire --out {name}.json.gz`")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    pool = derived_pool(data) if "derived_from" in data else BankPool.from_dict(data)
    if expected_hash is not None and pool.hash != expected_hash:
        raise PoolHashMismatch(
            f"Bank pool {name!r} hashes to {pool.hash}, but the env spec pins {expected_hash}; "
            "reinstall dreamer-gym or pass the matching pool"
        )
    return pool


def derived_pool(data: dict[str, Any]) -> BankPool:
    """A pool that is another pool's banks cut into other regions: ``{"derived_from": NAME, "base_hash": HASH,
    "region_scheme": {...}}``. Why: a new region scheme (windows with retrieved entries) is a new pool with its
    own hash, but shipping the banks twice would double the package data; the base is loaded by its pinned hash,
    so the derived pool can never sit on other banks than the ones it was made from."""
    for key in ("derived_from", "base_hash", "region_scheme"):
        if key not in data:
            raise ValueError(f"a derived pool file needs `{key}` (it has {sorted(data)}): write it with "
                             "`derive_pool_file`")
    pool = replace(load_pool(data["derived_from"], data["base_hash"]),
                   region_scheme=RegionScheme(**data["region_scheme"]))
    if data.get("hash") and data["hash"] != pool.hash:
        raise PoolHashMismatch(f"derived pool file says {data['hash']} but its content hashes to {pool.hash}")
    return pool


def derive_pool_file(base: str, region_scheme: RegionScheme, path: str | Path) -> BankPool:
    """Write a derived pool file (:func:`derived_pool`) for ``base`` cut by ``region_scheme``; returns the pool."""
    data = {"derived_from": base, "base_hash": load_pool(base).hash, "region_scheme": region_scheme.to_dict()}
    pool = derived_pool(data)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump({**data, "hash": pool.hash}, fh, sort_keys=True)
    return pool


def load_or_build_pool(name: str, suite_name: str, expected_hash: str | None, progress: bool = True) -> BankPool:
    """Load ``name``; a pool that is neither shipped nor pinned (the official ALFWorld games, which only the
    user's machine has) is built once by real acquisition on ``suite_name`` and kept in the cache."""
    try:
        return load_pool(name, expected_hash)
    except FileNotFoundError:
        if expected_hash is not None:
            raise
    from dreamer_gym.suites import get_suite_spec

    logger.warning("bank pool %r is not built on this machine yet: acquiring it on %s (once)", name, suite_name)
    spec = get_suite_spec(suite_name)
    suite = spec.make()
    try:
        pool = build_pool(suite, spec.families, eval_variations=10, gold_variations=10, progress=progress)
    finally:
        suite.close()
    path = cached_pool_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    pool.save(tmp)
    tmp.replace(path)  # atomic: a reader never sees half a pool
    return pool


def build_pool(
    suite: TaskSuite,
    families: tuple[str, ...],
    seeds: tuple[int, ...] = (0, 1, 2),
    eval_variations: int = 10,
    gold_variations: int = 4,
    config: AcquisitionConfig | None = None,
    progress: bool = False,
    bank_configs: tuple[AcquisitionConfig, ...] | None = None,
    region_scheme: RegionScheme | None = None,
) -> BankPool:
    """Run acquisition for each seed and collect what the env needs to run without replaying it.

    ``config`` is every bank's; ``bank_configs`` (one per seed) gives each bank its own writer and schedule, and
    then each bank's plan is recorded as ``bank_meta``. ``region_scheme`` defaults to time windows (4 sessions,
    stride 2) when any bank is ``interleaved``, else to families (the -v0 pools, whose hashes stay put).
    """
    from tqdm.auto import tqdm

    if bank_configs is not None and len(bank_configs) != len(seeds):
        raise ValueError(f"Expected `bank_configs` to hold one config per seed ({len(seeds)}), got "
                         f"{len(bank_configs)}; pass one AcquisitionConfig per bank seed")
    configs = bank_configs or (config or AcquisitionConfig(families=families),) * len(seeds)
    if region_scheme is None:
        interleaved = any(c.schedule == "interleaved" for c in configs)
        region_scheme = RegionScheme(kind="window", sessions=4, stride=2) if interleaved else RegionScheme()
    gold: dict[EpisodeTask, tuple[str, ...]] = {}

    def gold_path(task: EpisodeTask) -> tuple[str, ...]:
        if task not in gold:
            gold[task] = tuple(suite.gold_path(task))
        return gold[task]

    banks, trajectories = [], {}
    for seed, bank_config in zip(seeds, configs):
        bank, trajs = acquire(suite, bank_config, seed, gold=gold_path, progress=progress)
        banks.append(bank)
        trajectories.update({t.id: t for t in trajs})
    meta = tuple(plan_episodes(c, s).meta(c) for s, c in zip(seeds, configs)) if bank_configs is not None else ()
    texts: dict[str, dict[str, dict[int, str]]] = {"dev": {}, "test": {}}
    for split in texts:
        for family in tqdm(families, desc=f"task texts ({split})", disable=not progress):
            texts[split][family] = {}
            for v in suite.variations(family, split)[:eval_variations]:
                suite.start(EpisodeTask(family, v))
                texts[split][family][v] = suite.task_description()
    train_gold = {
        f: {v: gold_path(EpisodeTask(f, v)) for v in suite.variations(f, "train")[:gold_variations]}
        for f in families
    }
    return BankPool(suite.name, families, tuple(banks), trajectories, texts, train_gold, tuple(seeds),
                    region_scheme=region_scheme, bank_meta=meta)
