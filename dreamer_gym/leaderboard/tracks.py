"""Leaderboard tracks as frozen data (``dreamer_gym/data/tracks/*.yaml``, also reached as
``leaderboards/tracks/``).

A :class:`Track` names the training id it measures (suite, pool, downstream agent: the id's reward
definition) and freezes what a training id leaves free or sets for training: the TEST split, the regions
(families x banks), the evaluation episodes per region, the budgets, and the seed of every draw. A
track may differ from its id only in the split, the episodes per region, the budgets and, for a
*held-out* track, the pool: one of the suite's held-out pools (``held_out_families`` acquired on bank
seeds no training pool uses), which no training id, reset or episode ever touches. Anything else would
measure something the id does not, and :meth:`Track.check` refuses it. A
:class:`TransferTrack` lists member tracks: the same consolidator, unchanged, on each.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from dreamer_gym.envs.config import ConsolidationConfig
from dreamer_gym.envs.frozen import BUDGET_FIELDS, REWARD_FIELDS, reward_definition
from dreamer_gym.errors import ConfigError

PROTOCOL_VERSION = 2  # 2: the ScienceWorld track scores held-out families on held-out banks (issue 11)
# what a track may set differently from its training id (everything else is the id's, checked)
TRACK_FIELDS: tuple[str, ...] = ("split", "eval_in_family", "eval_other", *BUDGET_FIELDS)


@dataclass(frozen=True)
class Track:
    """One frozen track; see the module docstring. Fields mirror the YAML file."""

    name: str
    protocol_version: int
    description: str
    env_id: str
    split: str
    families: tuple[str, ...]
    banks: tuple[int, ...]
    eval_in_family: int
    eval_other: int
    reward_agent: str
    agent_top_k: int
    agent_max_steps: int
    max_tool_calls: int
    max_emitted: int
    max_entry_tokens: int
    max_region_entries: int
    size_coef: float
    invalid_penalty: float
    seed: int
    pool: str | None = None  # None: the id's pool; else a held-out pool of the id's suite (with its hash)
    pool_hash: str | None = None

    @property
    def held_out(self) -> bool:
        return self.pool is not None

    def __post_init__(self) -> None:
        object.__setattr__(self, "families", tuple(self.families))
        object.__setattr__(self, "banks", tuple(self.banks))
        self.check()

    def env_kwargs(self, **free: Any) -> dict[str, Any]:
        """The env's keyword arguments: the id's, with the track's fields; ``free`` adds where/how fast
        (``workers``, ``executor``, ``store_path``; an LLM agent's backend), nothing reward-defining."""
        from dreamer_gym.envs.tracks import REGISTERED

        base = {k: v for k, v in REGISTERED[self.env_id].items() if k != "frozen"}
        mine = {f.name: getattr(self, f.name) for f in fields(self) if f.name in ConsolidationConfig.__dataclass_fields__
                and not (f.name in ("pool", "pool_hash") and not self.held_out)}
        return {**base, **mine, **free}

    def config(self, **free: Any) -> ConsolidationConfig:
        return ConsolidationConfig(**self.env_kwargs(**free))

    def regions(self) -> list[tuple[int, str]]:
        """Every (bank, family) region, in the order a run visits them."""
        return [(b, f) for f in self.families for b in self.banks]

    def check(self) -> None:
        """The track measures its id's reward (on TEST, with its own episodes and budgets) and nothing else."""
        from dreamer_gym.envs.tracks import REGISTERED

        if self.protocol_version != PROTOCOL_VERSION:
            raise ConfigError(f"track {self.name!r}: protocol_version {self.protocol_version}; this package "
                              f"scores protocol {PROTOCOL_VERSION}")
        if self.split != "test":
            raise ConfigError(f"track {self.name!r}: `split` must be 'test' (DEV is for training), got {self.split!r}")
        if self.env_id not in REGISTERED:
            raise ConfigError(f"track {self.name!r}: unknown `env_id` {self.env_id!r}; registered: {sorted(REGISTERED)}")
        id_kwargs = {k: v for k, v in REGISTERED[self.env_id].items() if k != "frozen"}
        expected = reward_definition(ConsolidationConfig(**id_kwargs))
        actual = reward_definition(self.config())
        allowed = (*TRACK_FIELDS, "pool", "pool_hash") if self.held_out else TRACK_FIELDS
        for name in REWARD_FIELDS:
            if name not in allowed and expected[name] != actual[name]:
                raise ConfigError(f"track {self.name!r}: `{name}` is {actual[name]!r} but {self.env_id} measures "
                                  f"with {expected[name]!r}; a track may change only {list(allowed)}")
        if not self.families or not self.banks:
            raise ConfigError(f"track {self.name!r}: `families` and `banks` must be non-empty")
        self._check_families(id_kwargs["suite"])

    def _check_families(self, suite: str) -> None:
        """A held-out track holds only held-out families (and pins its pool); any other only training ones."""
        from dreamer_gym.suites import get_suite_spec

        spec = get_suite_spec(suite)
        if self.held_out:
            if self.pool_hash is None:
                raise ConfigError(f"track {self.name!r}: a held-out `pool` must be pinned by `pool_hash`")
            outside = sorted(set(self.families) - set(spec.held_out_families))
            if outside:
                raise ConfigError(f"track {self.name!r}: families {outside} are not held out in suite {suite!r} "
                                  f"(held out: {list(spec.held_out_families)})")
        else:
            if self.pool_hash is not None:
                raise ConfigError(f"track {self.name!r}: `pool_hash` without `pool`")
            leaked = sorted(set(self.families) & set(spec.held_out_families))
            if leaked:
                raise ConfigError(f"track {self.name!r}: held-out families {leaked} on the training pool")


@dataclass(frozen=True)
class TransferTrack:
    """One consolidator, unchanged, on each member track; ``members`` are ``(role, track name)``."""

    name: str
    protocol_version: int
    description: str
    members: tuple[tuple[str, str], ...]

    def tracks(self) -> list[tuple[str, Track]]:
        return [(role, load_track(name)) for role, name in self.members]  # type: ignore[misc]


def tracks_dir() -> Path:
    return Path(str(resources.files("dreamer_gym") / "data" / "tracks"))


def track_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in tracks_dir().glob("*.yaml")))


def load_track(name_or_path: str | Path) -> Track | TransferTrack:
    """A shipped track by name (``scienceworld``) or a YAML file; unknown or missing fields raise ConfigError."""
    path = Path(name_or_path)
    if not path.suffix:
        path = tracks_dir() / f"{name_or_path}.yaml"
    if not path.exists():
        raise ConfigError(f"no track {str(name_or_path)!r}; shipped tracks: {list(track_names())}")
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ConfigError(f"track file {path} must hold a mapping")
    cls: type[Track] | type[TransferTrack] = TransferTrack if "members" in data else Track
    known = {f.name for f in fields(cls)}
    unknown, missing = sorted(set(data) - known), sorted(known - set(data))
    if unknown or missing:
        raise ConfigError(f"track file {path}: unknown fields {unknown}, missing fields {missing}")
    if cls is TransferTrack:
        data["members"] = tuple((m["role"], m["track"]) for m in data["members"])
        track = TransferTrack(**data)
        if track.protocol_version != PROTOCOL_VERSION:
            raise ConfigError(f"track {track.name!r}: protocol_version {track.protocol_version}; this package "
                              f"scores protocol {PROTOCOL_VERSION}")
        return track
    return Track(**data)
