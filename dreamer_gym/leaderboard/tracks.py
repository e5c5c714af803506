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

Window regions (issue 40): a pool that cuts its banks into time windows (``window:A-B``) has other windows in
every bank (a bank's windows follow its own episode count), so ``families x banks`` names no region. A track on
such a pool lists its regions (``regions: [[bank, "window:A-B"], ...]``, a seeded sample of the pool's windows):
required there, forbidden on a pool cut by family, where the regions stay ``families x banks``. Its ``families``
are the families the windows hold (the held-out check applies to them) and its ``banks`` the banks they come
from; :meth:`Track.check_pool` checks both against the pool.

A track file of the *next* protocol (a draft, kept outside the package until the protocol is shipped with every
row re-run) loads only when asked for by name: ``load_track(path, draft=True)``.

A track file is the frozen record of a protocol: a change is a new protocol, never an edit. The reward
definition is declared once, in :class:`dreamer_gym.contract.definition.RewardDefinition`; a track does not
declare its fields again but *records* their values (:attr:`Track.recorded`), data that :meth:`Track.check`
compares with its id's definition. A definition that no longer matches a track (a changed value, a new
field the file does not record) fails that track's check, naming the field.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, fields
from functools import lru_cache
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
# the key of a track file's optional explicit region list (window tracks: :attr:`Track.region_list`)
REGIONS_KEY = "regions"
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
    # the explicit regions, (bank, region key), in the order a run visits them: the file's optional `regions`,
    # required on a pool cut into windows and forbidden otherwise (None: families x banks)
    region_list: tuple[tuple[int, str], ...] | None
    # a track of protocol PROTOCOL_VERSION + 1, loaded on purpose (load_track(..., draft=True)); never ranked
    draft: bool

    def __init__(self, *, recorded: tuple[tuple[str, Any], ...] = (), draft: bool = False, **data: Any) -> None:
        own = [f.name for f in fields(self) if f.name not in OPTIONAL_OWN]
        missing = [name for name in own if name not in data]
        if missing:
            raise ConfigError(f"track {data.get('name')!r}: missing fields {missing}")
        for name in own:
            value = data.pop(name)
            object.__setattr__(self, name, tuple(value) if name in ("families", "banks") else value)
        listed = data.pop(REGIONS_KEY, None)
        listed = data.pop("region_list", listed)  # dataclasses.replace passes the attribute's name
        object.__setattr__(self, "region_list", None if listed is None else _region_list(self.name, listed))
        object.__setattr__(self, "draft", bool(draft))
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
        """The keys every track file holds: the track's own fields and the values it records (``regions``, the
        one optional key, is not among them)."""
        return (*(f.name for f in fields(cls) if f.name not in OPTIONAL_OWN), *RECORDED_FIELDS)

    @property
    def held_out(self) -> bool:
        return self.pool is not None

    def data(self) -> dict[str, Any]:
        """Every field as the track file holds it (its own fields, then the recorded values)."""
        own = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in OPTIONAL_OWN}
        listed = {} if self.region_list is None else {REGIONS_KEY: [[b, k] for b, k in self.region_list]}
        return {**own, **listed, **dict(self.recorded)}

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
        """Every (bank, region key) region, in the order a run visits them: the listed regions of a window
        track, else every (bank, family)."""
        if self.region_list is not None:
            return list(self.region_list)
        return [(b, f) for f in self.families for b in self.banks]

    @property
    def windows(self) -> bool:
        """Whether the track's regions are time windows (an explicit region list) rather than families."""
        return self.region_list is not None

    def reset_options(self, bank: int, key: str) -> dict[str, Any]:
        """The env's reset options for one region: ``{"bank", "region"}`` for a window, ``{"bank", "family"}``
        for a family region (as protocol 3 ran them)."""
        return {"bank": bank, "region": key} if self.windows else {"bank": bank, "family": key}

    def pool_name(self) -> str | None:
        """The pool the track's regions are cut from: its own (held out) or its id's."""
        from dreamer_gym.contract import ids

        return self.pool if self.held_out else ids.REGISTERED[self.env_id].get("pool")

    def check(self) -> None:
        """The track measures its id's reward (on TEST, with its own episodes and budgets) and nothing else:
        it records every field of the contract's definition (bar those its id names), each at the id's value."""
        from dreamer_gym.contract import ids

        check_protocol(self.name, self.protocol_version, self.draft)
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
        self._check_region_list(id_kwargs.get("pool"))

    def _check_region_list(self, id_pool: str | None) -> None:
        """``regions`` is listed exactly where the pools cut windows (the track's pool cuts what its id's does),
        and its banks are the track's ``banks``."""
        kind, id_kind = pool_region_kind(self.pool_name()), pool_region_kind(id_pool)  # None: not on this machine
        if self.held_out and None not in (kind, id_kind) and kind != id_kind:
            raise ConfigError(f"track {self.name!r}: pool {self.pool!r} cuts {kind} regions but {self.env_id}'s "
                              f"pool {id_pool!r} cuts {id_kind} regions; a held-out pool must cut "
                              "the regions its id measures")
        if kind == "window" and self.region_list is None:
            raise ConfigError(f"track {self.name!r}: pool {self.pool_name()!r} cuts its banks into time windows, "
                              f"whose keys differ per bank: list the regions as `{REGIONS_KEY}: [[bank, "
                              "\"window:A-B\"], ...]`")
        if self.region_list is None:
            return
        if kind == "family":
            raise ConfigError(f"track {self.name!r}: `{REGIONS_KEY}` lists regions, but pool {self.pool_name()!r} "
                              "is cut by family: its regions are `families` x `banks`; drop `regions`")
        listed = sorted({b for b, _ in self.region_list})
        if listed != sorted(self.banks):
            raise ConfigError(f"track {self.name!r}: `banks` must be the banks `{REGIONS_KEY}` lists ({listed}), "
                              f"got {list(self.banks)}")

    def window_families(self, pool: Any) -> set[str]:
        """The families the listed windows' own sessions played (what their evaluation episodes are drawn from);
        a listed window the pool does not have raises ConfigError."""
        from dreamer_gym.memory.regions import bank_at, region_task_mix

        held: set[str] = set()
        for bank, key in self.region_list or ():
            if not 0 <= bank < len(pool.banks) or key not in pool.region_keys(bank):
                raise ConfigError(f"track {self.name!r}: region ({bank}, {key!r}) is not a window of pool "
                                  f"{self.pool_name()!r} (it has {len(pool.banks)} banks)")
            old = bank_at(pool.banks[bank], key)
            held |= set(region_task_mix(old, pool.region_scheme.select(old, key, pool.trajectories,
                                                                       self.max_region_entries)))
        return held

    def check_pool(self, pool: Any) -> None:
        """Against the loaded pool: every listed window is one of its bank's windows, and the families the
        windows hold are the track's ``families`` (so the held-out check of :meth:`check` covers every episode
        a window plays). Called by the runner before a run, and by the tests."""
        if self.region_list is None:
            return
        held = self.window_families(pool)
        if held != set(self.families):
            raise ConfigError(f"track {self.name!r}: its windows hold families {sorted(held)}; `families` must list "
                              f"exactly those, got {list(self.families)}")

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


OPTIONAL_OWN: tuple[str, ...] = ("recorded", "region_list", "draft")  # a Track's fields a track file may leave out


def check_protocol(name: str, version: int, draft: bool = False) -> None:
    """This package scores :data:`PROTOCOL_VERSION`; a draft (``draft=True``) is the next protocol's, loaded on
    purpose to size or pilot a track before that protocol ships."""
    wanted = PROTOCOL_VERSION + 1 if draft else PROTOCOL_VERSION
    if version != wanted:
        how = (f"a draft is protocol {PROTOCOL_VERSION + 1}" if draft else
               f"a draft of protocol {PROTOCOL_VERSION + 1} loads with load_track(path, draft=True)")
        raise ConfigError(f"track {name!r}: protocol_version {version}; this package scores protocol "
                          f"{PROTOCOL_VERSION} ({how})")


def _region_list(name: str, listed: Any) -> tuple[tuple[int, str], ...]:
    """The file's ``regions`` as (bank, key) pairs, each a window key, none twice."""
    from dreamer_gym.memory.regions import parse_window

    out = []
    for item in listed if isinstance(listed, (list, tuple)) else [listed]:
        ok = isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], int) \
            and not isinstance(item[0], bool) and isinstance(item[1], str) and parse_window(item[1]) is not None
        if not ok:
            raise ConfigError(f"track {name!r}: `{REGIONS_KEY}` must be a non-empty list of [bank, \"window:A-B\"] "
                              f"pairs, got item {item!r}")
        out.append((int(item[0]), str(item[1])))
    if not out or len(set(out)) != len(out):
        raise ConfigError(f"track {name!r}: `{REGIONS_KEY}` must list at least one region, none twice")
    return tuple(out)


@lru_cache(maxsize=32)
def pool_region_kind(name: str | None) -> str | None:
    """``"window"`` or ``"family"``: how pool ``name`` cuts its banks, read from its file without building it (a
    derived pool's file is its region scheme); None where the pool is not on this machine (built on first use)."""
    if name is None:
        return None
    from dreamer_gym.pool import cached_pool_path

    path = Path(name)
    for candidate in (path, Path(str(resources.files("dreamer_gym") / "data" / f"{name}.json.gz")),
                      cached_pool_path(name)):
        if candidate.suffix and candidate.exists():
            with gzip.open(candidate, "rt", encoding="utf-8") as fh:
                data = json.load(fh)
            return str(data.get("region_scheme", {}).get("kind", "family"))
    return None


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


def load_track(name_or_path: str | Path, *, draft: bool = False) -> Track | TransferTrack:
    """A track by name (shipped, ``scienceworld``, or registered: :data:`TRACKS`) or a YAML file; unknown or
    missing fields raise ConfigError. ``draft``: the file is of the next protocol (``PROTOCOL_VERSION + 1``), a
    track being sized before its protocol ships (research/tracks/); the default refuses it."""
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
    optional = {REGIONS_KEY} if cls is Track else set()
    unknown, missing = sorted(set(data) - known - optional), sorted(known - set(data))
    if unknown or missing:
        raise ConfigError(f"track file {path}: unknown fields {unknown}, missing fields {missing}")
    if cls is TransferTrack:
        data["members"] = tuple((m["role"], m["track"]) for m in data["members"])
        track = TransferTrack(**data)
        check_protocol(track.name, track.protocol_version, draft)
        return track
    return Track(**data, draft=draft)
