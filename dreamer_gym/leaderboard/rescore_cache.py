"""The re-scoring cache: an evaluation episode the board has played is never played again for the same track,
pool and code.

Re-scoring a track costs its episodes (everything else is under 1%: docs/performance.md, "Re-scoring a
track"). Two kinds of episode repeat from one submission to the next, and both are served from here:

* the *before* side of every region (bank v0 on the region's episodes) is the same for every submission;
* an *after* episode whose retrieval the new entries did not change: the downstream agent plays an episode as
  a function of (its config, the suite, the task, the seed, the entries it retrieved, in order) and nothing
  else, so it is the same episode as the before side's (or as another submission's with the same retrieval).

Both are what the evaluator's own cache already keys on (:meth:`~dreamer_gym.evaluation.Evaluator.episode_key`:
the retrieved entries' ids are content hashes of their text and fields), so the board only has to keep that cache
on disk, in one SQLite file per (track, protocol, pool hash, code fingerprint) that :func:`cache_path` names.
A changed track, pool or episode draw asks for other keys; changed code that decides an episode (the agents,
suites, evaluation, memory, LLM and prompt rooms, the package and simulator versions: :func:`code_fingerprint`)
opens another file. A submitter's data cannot change a cached value: a key names every input of the episode it
holds, the board's own evaluator plays it, and a submission that retrieves other entries asks for other keys.
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from dreamer_gym.paths import cache_root

# the rooms whose code decides what an evaluation episode scores (the reward is computed from the cached
# results each time, so the contract room is not among them)
EPISODE_ROOMS: tuple[str, ...] = ("agents", "suites", "evaluation", "memory", "llm", "prompts")
# simulators and engines an episode runs on: their versions are part of the fingerprint where installed
SIMULATORS: tuple[str, ...] = ("scienceworld", "alfworld", "textworld", "browsergym-core", "browsergym-miniwob",
                               "playwright", "py4j")


def default_root() -> Path:
    """``$DREAMER_GYM_CACHE/rescore``: beside the pools, one file per track, pool and code fingerprint."""
    return cache_root() / "rescore"


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the source files of :data:`EPISODE_ROOMS`, the package version and the installed simulators'
    versions: a cache filled by other code is never read (any edit of those rooms gives a cold cache)."""
    import dreamer_gym

    package = Path(dreamer_gym.__file__).parent
    digest = hashlib.sha256(f"dreamer_gym {dreamer_gym.__version__}".encode())
    for room in EPISODE_ROOMS:
        for path in sorted((package / room).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    for name in SIMULATORS:
        try:
            digest.update(f"{name}=={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name} absent".encode())
    return digest.hexdigest()[:16]


def cache_path(track: Any, root: Path | None = None) -> Path:
    """The SQLite evaluation cache of ``track`` (a :class:`~dreamer_gym.leaderboard.tracks.Track`) under ``root``
    (default :func:`default_root`): named by the track, its protocol, its pool's hash and the code fingerprint."""
    pool_hash = track.config().pool_hash or "id-pool"
    name = f"{track.name}-v{track.protocol_version}-{pool_hash}-{code_fingerprint()}.sqlite"
    return (root if root is not None else default_root()) / name


def cached_free(track: Any, cache: Path | None, free: dict[str, Any]) -> dict[str, Any]:
    """``free`` (where and how fast to evaluate) with ``store_path`` on ``track``'s cache under ``cache`` (a folder;
    ``None``: no cache, as before). An explicit ``store_path`` wins: the caller chose the store."""
    if cache is None or "store_path" in free:
        return free
    path = cache_path(track, cache)
    path.parent.mkdir(parents=True, exist_ok=True)
    return {**free, "store_path": str(path)}
