"""The verified tier: the board runs the consolidator itself, sandboxed, on a draw nobody could have tuned against.

Re-scoring proves a submission's banks score what it claims; it does not prove they were written without
looking at TEST: the simulator, the evaluator and the held-out pool ship with the package. :func:`verify`
closes that: it draws *now* (from the OS's entropy, recorded) the bank seeds, a subset of each family's TEST
variations where the suite has more than the track uses, and an episode secret from which the reward service
derives the evaluation episodes; acquires a fresh pool of the track's families on them with real acquisition;
writes a verification track that differs from the shipped one only in its pool; runs the consolidator (a
registered name, an entry point, or ``module:attr`` of the submitter's code) **inside a bubblewrap sandbox**
(:mod:`dreamer_gym.leaderboard.sandbox`: no simulator, no pool, no reference procedures or reward code, no
network), relaying its tool calls to the real env out here; builds the submission from what the env recorded
(never from a file the consolidator wrote) and validates it like any submission (checks and re-score), with
the oracle's banks on the same fresh pool as the reference a contender may not copy. The results file says
``tier: verified`` and records the seeds, the TEST variations, the secret, the pool's hash and the oracle's score.

Only held-out tracks are verified this way (their pool is a held-out pool by definition); a track scored on
its training id's pool holds out the suite, not the banks.

Cost (docs/performance.md, "Re-scoring a track"): a verification visits ``regions`` regions (default
:data:`DEFAULT_REGIONS`), drawn at verification like everything else: whole fresh banks, ``ceil(regions /
families)`` of them, each with every family of the track (a bank's families share its acquisition, so a part
of a bank costs nearly all of it). Its three scored stages play on one evaluation cache in the work dir: the
oracle's run plays the before side of every region once, the consolidator's run shares it, and the re-score
replays the consolidator's calls onto the same banks and episodes, so it plays nothing new.
"""
from __future__ import annotations

import math
import random
import secrets
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard.runner import run_track
from dreamer_gym.leaderboard.sandbox import Sandbox, SandboxedConsolidator
from dreamer_gym.leaderboard.submission import (
    build_submission,
    consolidator_block,
    dumps,
    frozen_fields,
    run_for_submission,
)
from dreamer_gym.leaderboard.tracks import Track
from dreamer_gym.leaderboard.validate import check_data, compare_claims, rescore, results_record

# fresh bank seeds come from here: far from the seeds any shipped pool was acquired on (0-5, 100-102)
SEED_LOW, SEED_HIGH = 10_000, 2**31 - 1
# regions a verification visits unless told otherwise: 10 fresh banks x 4 families of the protocol-3 scienceworld
# track (a quarter of its 160), sized so that a consolidator whose fresh-bank score falls short of its re-scored row
# by the gap docs/leaderboard.md ("The verified tier") states is caught at 80% power, within the 20 minutes
# on 2 cores; a smaller track is verified on all of its regions
DEFAULT_REGIONS = 40
# the evaluation cache the stages share, in the work dir (hidden from the sandbox like the fresh pool)
CACHE_FILE = "evaluation-cache.sqlite"
# the consolidator stage's wall time unless `--timeout` says otherwise (docs/leaderboard.md, "The sandbox"): a start
# (the sandbox, imports, a local model's load or its conversion into /tmp), then per region each tool call the
# track allows at 60 s, about twice what one call of the bundled 135M prompted consolidator took in the sandbox on
# the 2 cores at load 6-8 (40 calls in 855-1312 s), and each evaluation episode the board plays in the stage at
# 2 s (0.11-0.25 s measured)
TIMEOUT_START_S = 600.0
TIMEOUT_PER_CALL_S = 60.0
TIMEOUT_PER_EPISODE_S = 2.0


def default_timeout(track: Track) -> float:
    """Seconds the consolidator stage may take on ``track``: sized from its regions, tool calls and episodes."""
    per_region = (track.config().max_tool_calls * TIMEOUT_PER_CALL_S
                  + (track.eval_in_family + track.eval_other) * TIMEOUT_PER_EPISODE_S)
    return TIMEOUT_START_S + per_region * len(track.regions())


def verification_banks(track: Track, regions: int | None) -> int:
    """How many fresh banks a verification of ``regions`` regions acquires: whole banks, each with all of the
    track's families, never more than the track has (``None``: all of them)."""
    if regions is None:
        return len(track.banks)
    if isinstance(regions, bool) or not isinstance(regions, int) or regions < 1:
        raise ConfigError(f"`regions` must be a positive int (the regions a verification visits), got {regions!r}")
    return min(len(track.banks), math.ceil(regions / len(track.families)))


def draw_seeds(n: int) -> list[int]:
    """``n`` distinct bank seeds from the OS's entropy (not from any seed a submitter could know)."""
    seeds: set[int] = set()
    while len(seeds) < n:
        seeds.add(SEED_LOW + secrets.randbelow(SEED_HIGH - SEED_LOW))
    return sorted(seeds)


def draw_test_variations(all_test: Sequence[int], n: int) -> list[int]:
    """``n`` of a family's TEST variations drawn from the OS's entropy (all of them where it has ``n`` or fewer)."""
    return sorted(all_test) if len(all_test) <= n else sorted(random.SystemRandom().sample(list(all_test), n))


class RedrawnTest:
    """A suite whose TEST split is the drawn subset (the pool's evaluation texts, hence episodes, come from it);
    every other call goes to the suite."""

    def __init__(self, suite: Any, test: Mapping[str, Sequence[int]]) -> None:
        self._suite, self._test = suite, test

    def variations(self, family: str, split: str) -> tuple[int, ...]:
        if split == "test" and family in self._test:
            return tuple(self._test[family])
        return self._suite.variations(family, split)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._suite, name)


def acquire_pool(track: Track, seeds: list[int], out: Path, *, eval_variations: int = 20, gold_variations: int = 20,
                 test_variations: Mapping[str, Sequence[int]] | None = None,
                 progress: bool = False) -> tuple[Path, str, dict[str, list[int]]]:
    """A fresh pool of the track's families on ``seeds`` (real acquisition on the track's suite), its TEST texts
    from ``test_variations`` (default: :func:`draw_test_variations` of ``eval_variations`` per family)."""
    from dreamer_gym.pool import build_pool
    from dreamer_gym.suites import get_suite_spec

    spec = get_suite_spec(track.config().suite)
    suite = spec.make()
    try:
        drawn = {f: sorted(int(v) for v in test_variations[f]) if test_variations is not None else
                 draw_test_variations(suite.variations(f, "test"), eval_variations) for f in track.families}
        pool = build_pool(RedrawnTest(suite, drawn), track.families, tuple(seeds), eval_variations, gold_variations,
                          progress=progress)
    finally:
        suite.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    pool.save(out)
    return out, pool.hash, drawn


def verification_track(track: Track, pool: Path, pool_hash: str, banks: int | None = None) -> Track:
    """The shipped track with the fresh pool: the same families, episodes, budgets and seed, on the pool's
    ``banks`` fresh banks (default: as many as the track has)."""
    if not track.held_out:
        raise ConfigError(f"track {track.name!r} is scored on its training id's pool; only held-out tracks have a "
                          "verified tier (docs/leaderboard.md)")
    return replace(track, pool=str(pool), pool_hash=pool_hash, banks=tuple(range(banks or len(track.banks))))


def write_track(track: Track, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({**frozen_fields(track), "description": track.description}, sort_keys=True))
    return path


def reference_banks(track: Track, *, progress: bool = False, episode_secret: str | None = None,
                    **free: Any) -> list[dict[str, Any]]:
    """The oracle's submission on the fresh banks (it reads their gold paths, out here; the sandbox hides the pool
    from the consolidator). A verified run whose banks are the oracle's texts is refused like a re-scored one
    (copy_check.check_not_a_reference_copy)."""
    import json

    from dreamer_gym.consolidators import make_consolidator

    result = run_track(track, make_consolidator("oracle"), progress=progress, episode_secret=episode_secret, **free)
    data = build_submission(consolidator_block("oracle", kind="reference"), [(track, result)])
    return [json.loads(dumps(data))]


STAGES = ("acquire", "oracle", "consolidator", "re-score")


class StageReport:
    """Names each stage of a verification on stderr as it starts and ends (with its seconds), so a run of
    several minutes never sits silent between the bars of its stages."""

    def __init__(self, enabled: bool, timings: dict[str, float]) -> None:
        self.enabled = enabled
        self.timings = timings

    def __call__(self, stage: str, what: str):  # noqa: ANN204 - a context manager
        import contextlib

        @contextlib.contextmanager
        def running():  # noqa: ANN202
            index = STAGES.index(stage) + 1
            if self.enabled:
                print(f"[{index}/{len(STAGES)}] {stage}: {what}", file=sys.stderr, flush=True)
            clock = time.perf_counter()
            yield
            self.timings[f"{stage.replace('-', '')}_s"] = seconds = time.perf_counter() - clock
            if self.enabled:
                print(f"[{index}/{len(STAGES)}] {stage}: done in {seconds:.0f} s", file=sys.stderr, flush=True)

        return running()


def run_sandboxed(track: Track, consolidator: str, sandbox: Sandbox, *, kind: str, trained_on: list[str] | None = None,
                  episode_secret: str | None = None, timeout_s: float | None = None, progress: bool = False,
                  name: str | None = None, **free: Any) -> dict[str, Any]:
    """The submission of ``consolidator`` on ``track``, run in ``sandbox`` (after its self-test) with the real env
    and its withholding service out here; built from what the env recorded, like ``leaderboard submit``.
    ``timeout_s``: the stage's wall time (default :func:`default_timeout` of the track); the sandbox's
    ``limits`` bound its memory, ``/tmp`` and processes."""
    sandbox.self_test()
    timeout_s = default_timeout(track) if timeout_s is None else timeout_s
    with SandboxedConsolidator(sandbox, consolidator, track.config(**free), timeout_s=timeout_s) as remote:
        result = run_for_submission(track, remote, name=consolidator, progress=progress, episode_secret=episode_secret,
                                    **free)  # keeps the calls: the re-score replays them (validate.check_regions)
    if progress:
        print(f"sandbox: peak resident {remote.peak_mb:.0f} MiB of {sandbox.limits.memory_mb} MiB, time limit "
              f"{timeout_s:.0f} s", file=sys.stderr, flush=True)
    block = consolidator_block(name or consolidator, kind=kind, config={"consolidator": consolidator}, trained_on=trained_on,
                               llm=remote.ready.get("llm"))
    return build_submission(block, [(track, result)])


def verify(track: Track, consolidator: str, work_dir: Path, *, seeds: list[int] | None = None,
           kind: str | None = None, trained_on: list[str] | None = None, eval_variations: int = 20,
           gold_variations: int = 20, test_variations: Mapping[str, Sequence[int]] | None = None,
           episode_secret: str | None = None, sandbox: Sandbox | None = None, timeout_s: float | None = None,
           progress: bool = False, timings: dict[str, float] | None = None, regions: int | None = DEFAULT_REGIONS,
           name: str | None = None, **free: Any) -> dict[str, Any]:
    """Run ``consolidator`` on a fresh draw of ``track`` in the sandbox, check and re-score; a results record of
    tier ``verified``. ``seeds``, ``test_variations`` and ``episode_secret`` default to fresh draws (pass the
    recorded ones only to reproduce a run); ``regions``: how many regions to visit (:func:`verification_banks`
    fresh banks; ``None``: as many as the track; given ``seeds`` say it themselves); ``sandbox`` defaults to
    bubblewrap on PATH with its default limits; ``timeout_s``: the consolidator stage's wall time (default
    :func:`default_timeout` of the fresh track); ``name``: the row's name (default: ``consolidator``, which may be an entry point or a
    checkpoint path that is no row name). A sandbox that is missing or fails its self-test raises
    :class:`~dreamer_gym.leaderboard.sandbox.SandboxUnavailable` before any work."""
    if track.windows:  # fresh banks here are family pools: a window track needs interleaved ones, cut again
        raise ConfigError(f"track {track.name!r} lists window regions; its verified tier (fresh interleaved banks "
                          "cut into windows and a fresh region list) is not built yet: docs/leaderboard.md, \"The "
                          "scienceworld-windows track\"")
    source = "given (a re-run of an earlier verification)" if seeds is not None else "drawn at verification (OS entropy)"
    seeds = sorted(seeds) if seeds is not None else draw_seeds(verification_banks(track, regions))
    if not 1 <= len(seeds) <= len(track.banks) or len(set(seeds)) != len(seeds):
        raise ConfigError(f"track {track.name!r} has {len(track.banks)} banks; got {len(seeds)} seeds ({seeds}): give "
                          f"1 to {len(track.banks)} distinct bank seeds")
    episode_secret = episode_secret if episode_secret is not None else secrets.token_hex(16)
    free = {"store_path": str(work_dir.resolve() / CACHE_FILE), **free}  # the stages share their episodes
    # the fresh pool lives in work_dir: hidden from the consolidator like the shipped ones
    sandbox = replace(sandbox or Sandbox(), hidden=(*(sandbox.hidden if sandbox else ()), work_dir.resolve()))
    sandbox.self_test()  # refuse before minutes of acquisition, not after
    stage = StageReport(progress, {} if timings is None else timings)
    with stage("acquire", f"fresh banks of {len(track.families)} families on bank seeds {seeds} (real acquisition)"):
        pool_path, pool_hash, drawn = acquire_pool(track, seeds, work_dir / "pool.json.gz",
                                                   eval_variations=eval_variations, gold_variations=gold_variations,
                                                   test_variations=test_variations, progress=progress)
    fresh = verification_track(track, pool_path.resolve(), pool_hash, len(seeds))
    write_track(fresh, work_dir / f"{track.name}.yaml")
    with stage("oracle", "the oracle's banks on the fresh pool (the reference a contender may not copy)"):
        references = reference_banks(fresh, progress=progress, episode_secret=episode_secret, **free)
    with stage("consolidator", f"{consolidator!r} in the bubblewrap sandbox, on the fresh track"):
        data = run_sandboxed(fresh, consolidator, sandbox, kind=kind or "contender", trained_on=trained_on,
                             episode_secret=episode_secret, timeout_s=timeout_s, progress=progress, name=name, **free)
        (work_dir / "submission.json").write_text(dumps(data))  # kept for the record; the board reads `data`
    verification = {"bank_seeds": seeds, "pool_hash": pool_hash, "eval_variations": eval_variations,
                    "regions": len(fresh.regions()), "track_regions": len(track.regions()),
                    "oracle_score": references[0]["tracks"][0]["claimed"]["score"],
                    "gold_variations": gold_variations, "seed_source": source, "test_variations": drawn,
                    "episode_secret": episode_secret, "sandbox": "bubblewrap"}
    with stage("re-score", "the submission's checks, then its banks re-scored on TEST episodes"):
        counts: dict[str, int] = {}
        record = verified_record(fresh, data, references, verification, episode_secret=episode_secret,
                                 progress=progress, evaluation=counts, **free)
    stage.timings["rescore_episodes_played"] = counts.get("misses", 0)  # 0: the consolidator's run played them
    return record


def verified_record(fresh: Track, data: dict[str, Any], references: Sequence[dict[str, Any]],
                    verification: dict[str, Any], *, episode_secret: str, progress: bool = False,
                    **free: Any) -> dict[str, Any]:
    """Verify's last stage: ``data`` (the sandboxed run's submission on ``fresh``) checked like any submission, the
    oracle's banks on the fresh pool (``references``) as what it may not copy, re-scored on the same episodes
    (``episode_secret``), and its results record of tier ``verified``: both reported columns and the needs-review
    verdict against those fresh references, never the shipped ones (a paraphrase reads like the oracle *of this
    draw*)."""
    [checked] = check_data(data, {fresh.name: fresh}, references=references)
    records = rescore(fresh, checked.block, progress=progress, episode_secret=episode_secret, **free)
    compare_claims(0, checked.block, records)
    return results_record(data, fresh, records, "verified", verification, references=references)
