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

A track file is the frozen record of a protocol: a change is a new protocol, never an edit. The reward
definition is declared once, in :class:`dreamer_gym.contract.definition.RewardDefinition`; a track does not
declare its fields again but *records* their values (:attr:`Track.recorded`), data that :meth:`Track.check`
compares with its id's definition. A definition that no longer matches a track (a changed value, a new
field the file does not record) fails that track's check, naming the field.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from dreamer_gym.contract.config import ConsolidationConfig
from dreamer_gym.contract.definition import BUDGET_FIELDS, REWARD_FIELDS
from dreamer_gym.contract.frozen import reward_definition
from dreamer_gym.errors import ConfigError
from dreamer_gym.registry import Registry

# 2: the ScienceWorld track scores held-out families on held-out banks (issue 11); 3: tracks measure the -v1 ids
# (tool contract 1), and `scienceworld` is sized by a power target: 40 held-out banks x 4 families x every TEST
# variation (issue 30; each track file states its MDD)
PROTOCOL_VERSION = 3
# what a track may set differently from its training id (everything else is the id's, checked)
TRACK_FIELDS: tuple[str, ...] = ("split", "eval_in_family", "eval_other", *BUDGET_FIELDS)
# the reward-defining fields a track file does not record: its `env_id` names them (the suite, and by its
# version the tool contract and the windows' filing rule)
NAMED_BY_ID: tuple[str, ...] = ("suite", "tool_contract", "window_own_families")
RECORDED_FIELDS: tuple[str, ...] = tuple(n for n in (*REWARD_FIELDS, *BUDGET_FIELDS) if n not in NAMED_BY_ID)


@dataclass(frozen=True, init=False)
class Track:
    """One frozen track; see the module docstring. Built from the YAML file's mapping, as
    ``Track(**data)``: the fields below, and every other key (the reward-defining values and budgets the
    file records) in :attr:`recorded`, read back as attributes (``track.size_coef``)."""

    name: str
    protocol_version: int
    description: str
    env_id: str
    families: tuple[str, ...]
    banks: tuple[int, ...]
    seed: int
    # the minimum detectable paired difference (normalised, 80% power, 5% two-sided) the file states: the figure a
    # sized track was designed for, or an unsized track's last measured one (`dreamer-gym power --track` on the
    # previous protocol's rows); docs/power.md measures it on the track's own rows
    mdd: float | None
    recorded: tuple[tuple[str, Any], ...]  # (field, value) as the file records them; checked against the contract

    def __init__(self, *, recorded: tuple[tuple[str, Any], ...] = (), **data: Any) -> None:
        own = [f.name for f in fields(self) if f.name != "recorded"]
        missing = [name for name in own if name not in data]
        if missing:
            raise ConfigError(f"track {data.get('name')!r}: missing fields {missing}")
        for name in own:
            value = data.pop(name)
            object.__setattr__(self, name, tuple(value) if name in ("families", "banks") else value)
        object.__setattr__(self, "recorded", tuple({**dict(recorded), **data}.items()))
        self.check()

    def __getattr__(self, name: str) -> Any:
        """A recorded value (``split``, ``size_coef``, ``pool``...) as an attribute."""
        recorded = dict(self.__dict__.get("recorded", ()))
        if name in recorded:
            return recorded[name]
        raise AttributeError(f"track {self.__dict__.get('name')!r} has no field {name!r}")

    @classmethod
    def file_fields(cls) -> tuple[str, ...]:
        """The keys of a track file: the track's own fields and the values it records."""
        return (*(f.name for f in fields(cls) if f.name != "recorded"), *RECORDED_FIELDS)

    @property
    def held_out(self) -> bool:
        return self.pool is not None

    def data(self) -> dict[str, Any]:
        """Every field as the track file holds it (its own fields, then the recorded values)."""
        own = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "recorded"}
        return {**own, **dict(self.recorded)}

    def env_kwargs(self, **free: Any) -> dict[str, Any]:
        """The env's keyword arguments: the id's, with the track's fields; ``free`` adds where/how fast
        (``workers``, ``executor``, ``store_path``; an LLM agent's backend), nothing reward-defining."""
        from dreamer_gym.contract import ids

        base = {k: v for k, v in ids.REGISTERED[self.env_id].items() if k != "frozen"}
        mine = {name: value for name, value in self.recorded if name in ConsolidationConfig.__dataclass_fields__
                and not (name in ("pool", "pool_hash") and not self.held_out)}
        return {**base, **mine, **free}

    def config(self, **free: Any) -> ConsolidationConfig:
        return ConsolidationConfig(**self.env_kwargs(**free))

    def regions(self) -> list[tuple[int, str]]:
        """Every (bank, family) region, in the order a run visits them."""
        return [(b, f) for f in self.families for b in self.banks]

    def check(self) -> None:
        """The track measures its id's reward (on TEST, with its own episodes and budgets) and nothing else:
        it records every field of the contract's definition (bar those its id names), each at the id's value."""
        from dreamer_gym.contract import ids

        if self.protocol_version != PROTOCOL_VERSION:
            raise ConfigError(f"track {self.name!r}: protocol_version {self.protocol_version}; this package "
                              f"scores protocol {PROTOCOL_VERSION}")
        self._check_recorded()
        if self.split != "test":
            raise ConfigError(f"track {self.name!r}: `split` must be 'test' (DEV is for training), got {self.split!r}")
        if self.env_id not in ids.REGISTERED:
            raise ConfigError(f"track {self.name!r}: unknown `env_id` {self.env_id!r}; registered: {sorted(ids.REGISTERED)}")
        id_kwargs = {k: v for k, v in ids.REGISTERED[self.env_id].items() if k != "frozen"}
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

    def _check_recorded(self) -> None:
        """Every field the contract defines is recorded (a definition that grew a field is a new protocol), and
        nothing else is."""
        recorded = dict(self.recorded)
        for name in RECORDED_FIELDS:
            if name not in recorded:
                raise ConfigError(
                    f"track {self.name!r}: the track file records no `{name}`, a field of the reward definition "
                    "(dreamer_gym.contract.definition); a track file is a frozen record: a definition that grew a "
                    "field is a new protocol, so write a new track file (and bump PROTOCOL_VERSION), never edit one")
        unknown = sorted(set(recorded) - set(RECORDED_FIELDS))
        if unknown:
            raise ConfigError(f"track {self.name!r}: unknown fields {unknown}; a track records {list(RECORDED_FIELDS)}")

    def _check_families(self, suite: str) -> None:
        """A held-out track holds only held-out families (and pins its pool); any other only training ones."""
        from dreamer_gym.suites import get_suite_spec

        spec = get_suite_spec(suite)
        if self.held_out:
            if self.pool_hash is None:
                raise ConfigError(f"track {self.name!r}: a held-out `pool` must be pinned by `pool_hash`")
            # a suite with held-out topics: the pool holds those only; a suite with none is held out whole (the
            # ScienceWorld-trained policy never sees it), and its track pool is fresh banks of its own families, on
            # seeds the id's pool does not use (tests/envs/test_held_out.py checks the seeds)
            allowed = spec.held_out_families or spec.families
            outside = sorted(set(self.families) - set(allowed))
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


# --- the track registry: the shipped YAMLs (the frozen record) plus tracks registered by name ---------------------
TRACKS: Registry[Any] = Registry(
    "track", "dreamer_gym.tracks", {p.stem: p for p in sorted(tracks_dir().glob("*.yaml"))}, option="track",
    how="dreamer_gym.leaderboard.register_track(name, path_or_track) or an entry point in the 'dreamer_gym.tracks' "
        "group (mine = \"my_pkg.tracks:MY_TRACK\", a Track or the Path of its YAML file)")


def register_track(name: str, track: str | Path | Track | TransferTrack, *, replace: bool = False) -> None:
    """Make ``track`` (a :class:`Track`, a :class:`TransferTrack` or the path of a track YAML file) known as
    ``name``, so ``load_track(name)`` and ``--track name`` find it. A shipped track's name is taken: a changed
    track is a new protocol under a new name, never an edit."""
    TRACKS.register(name, Path(track) if isinstance(track, str) else track, replace=replace)


def shipped_track_names() -> tuple[str, ...]:
    """The tracks this package ships (``dreamer_gym/data/tracks/*.yaml``): the only ones a board may rank."""
    return tuple(sorted(p.stem for p in tracks_dir().glob("*.yaml")))


# shipped tracks for trying the submitter's loop (submit -> validate -> render in minutes): validated like any
# track, never ranked, because their few regions separate nothing (docs/leaderboard.md, "Try-out track")
TRYOUT_TRACKS: frozenset[str] = frozenset({"tryout"})


def is_ranked_track(name: str) -> bool:
    """Whether a board ranks rows of track ``name``: a shipped track that is not a try-out. A track from a file
    or an entry point is validated like a shipped one, but its rows are listed apart, never ranked."""
    return name in shipped_track_names() and name not in TRYOUT_TRACKS


def load_board_track(name_or_path: str | Path) -> Track | TransferTrack:
    """:func:`load_track` for the leaderboard's commands (``--track NAME_OR_FILE``): a track file may not take a
    shipped track's name unless it holds that track's definition (a changed track is a new name, never an edit),
    so a submission's track name always means one definition."""
    track = load_track(name_or_path)
    name = track.name
    if Path(name_or_path).suffix and name in shipped_track_names():
        shipped = load_track(tracks_dir() / f"{name}.yaml")
        if isinstance(track, Track) and isinstance(shipped, Track):
            changed = sorted(k for k, v in track.data().items() if k != "description" and shipped.data().get(k) != v)
        else:
            changed = [] if track == shipped else ["members"]
        if changed:
            raise ConfigError(f"track file {str(name_or_path)!r} is named {name!r}, a shipped track, but changes "
                              f"{changed}: give the file's track its own `name`")
    return track


def write_track_file(track: Track, path: str | Path) -> Path:
    """Write ``track`` as a track YAML file, the one :func:`load_track` reads back: a track of your own starts as a
    shipped one with some fields replaced (``dataclasses.replace(load_track("tryout"), name="mine", ...)``)."""
    data = {name: list(value) if isinstance(value, tuple) else value for name, value in track.data().items()}
    path = Path(path)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def track_names() -> tuple[str, ...]:
    """Every track ``load_track`` finds by name: shipped, registered and installed as entry points."""
    return TRACKS.names()


def load_track(name_or_path: str | Path) -> Track | TransferTrack:
    """A track by name (shipped, ``scienceworld``, or registered: :data:`TRACKS`) or a YAML file; unknown or
    missing fields raise ConfigError."""
    path = Path(name_or_path)
    if not path.suffix:
        if str(name_or_path) not in TRACKS:
            raise ConfigError(f"no track {str(name_or_path)!r}; known tracks: {list(track_names())}; register your "
                              f"own with {TRACKS.how_to()}")
        found = TRACKS.get(str(name_or_path))
        if isinstance(found, (Track, TransferTrack)):
            return found
        path = Path(found)
    if not path.exists():
        raise ConfigError(f"no track {str(name_or_path)!r}; known tracks: {list(track_names())}")
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ConfigError(f"track file {path} must hold a mapping")
    cls: type[Track] | type[TransferTrack] = TransferTrack if "members" in data else Track
    known = set(Track.file_fields()) if cls is Track else {f.name for f in fields(cls)}
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
