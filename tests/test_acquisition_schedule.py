"""Acquisition schedules (issue 31): ``rounds`` (the -v0 pools, unchanged to the byte) and ``interleaved`` (each
episode its own session, families drawn from a per-bank task mix, writers of several skills), the bank metadata a
pool records, and the shipped window pool. Runs on the pure-Python toy suite (tests/suites/toy_suite.py), so
every bank here is real acquisition in milliseconds; the shipped pool is read from its file (no JVM)."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from dreamer_gym.acquisition import AcquisitionConfig, acquire, bank_configs, plan_episodes
from dreamer_gym.cli import main
from dreamer_gym.memory import RegionScheme
from dreamer_gym.memory.regions import parse_window, region_task_mix, select_region
from dreamer_gym.pool import build_pool, load_pool
from dreamer_gym.suites import make_suite, register_suite

sys.path.insert(0, str(Path(__file__).parent / "suites"))
import toy_suite  # noqa: E402

register_suite(toy_suite.SPEC)
FAMILIES = toy_suite.FAMILIES
# the toy bank of seed 0 under the rounds schedule, as the code before the schedules existed built it
ROUNDS_SEED0_HASH = "bd50e44d8b38fc7cb"
# the shipped window pool (dreamer-gym acquire --schedule interleaved, docs/banks.md)
WINDOWS_POOL_HASH = "p551804dfe6cc97d2"
WINDOWS_POOL_BANKS, WINDOWS_POOL_REGIONS = 24, 296


def interleaved(**fields: object) -> AcquisitionConfig:
    return AcquisitionConfig(**{"families": FAMILIES, "schedule": "interleaved", **fields})  # type: ignore[arg-type]


def test_rounds_schedule_is_unchanged() -> None:
    jobs = plan_episodes(AcquisitionConfig(families=FAMILIES), seed=0).jobs
    assert jobs == tuple((s, f) for s in range(4) for f in FAMILIES)
    bank, trajectories = acquire(make_suite("toy"), AcquisitionConfig(families=FAMILIES), seed=0)
    assert bank.hash == ROUNDS_SEED0_HASH
    assert [(t.session, t.family) for t in trajectories] == list(jobs)


def test_interleaved_sessions_are_episode_indices_drawn_from_the_bank_mix() -> None:
    config = interleaved(episodes=20)
    plans = {seed: plan_episodes(config, seed) for seed in range(4)}
    assert all(p.jobs == plan_episodes(config, s).jobs for s, p in plans.items())  # pure in the seed
    assert len({tuple(p.mix.values()) for p in plans.values()}) == 4  # every bank its own mix
    for plan in plans.values():
        assert [s for s, _ in plan.jobs] == list(range(20)) and set(plan.mix) == set(FAMILIES)
        assert sum(plan.mix.values()) == pytest.approx(1.0, abs=1e-3)
    _, trajectories = acquire(make_suite("toy"), config, seed=1)
    assert [(t.session, t.family) for t in trajectories] == list(plans[1].jobs)


def test_skill_scales_the_writers_noise() -> None:
    """A novice (2.0) takes more steps and fails more runs than an expert (0.5) on the same banks' plans."""
    def played(skill: float) -> tuple[int, int]:
        runs = [t for seed in range(4) for t in acquire(make_suite("toy"), interleaved(skill=skill), seed)[1]]
        return sum(len(t.steps) for t in runs), sum(t.final_score <= 0 for t in runs)

    (novice_steps, novice_failed), (expert_steps, expert_failed) = played(2.0), played(0.5)
    assert novice_steps > expert_steps and novice_failed > expert_failed


@pytest.mark.parametrize(("fields", "message"), [
    ({"schedule": "weekly"}, r"`schedule` to be one of \('rounds', 'interleaved'\), got 'weekly'"),
    ({"episodes": 0}, r"`episodes` to be a positive int, got 0"),
    ({"train_variations": 2.5}, r"`train_variations` to be a positive int, got 2.5"),
    ({"skill": 0.0}, r"`skill` to be a positive number, got 0.0; pass e.g. skill=1.0"),
    ({"mix_concentration": -1}, r"`mix_concentration` to be a positive number"),
    ({"early_sessions": -1}, r"`early_sessions` to be an int >= 0 or None, got -1"),
])
def test_bad_fields_name_the_field_and_the_fix(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        interleaved(**fields)


def test_bank_configs_cycle_skills_and_draw_run_lengths_by_seed() -> None:
    configs = bank_configs(FAMILIES, (7, 8, 9, 10), (16, 32), (0.5, 1.0, 2.0))
    assert [c.skill for c in configs] == [0.5, 1.0, 2.0, 0.5]
    assert all(16 <= c.episodes <= 32 and c.schedule == "interleaved" for c in configs)
    assert configs == bank_configs(FAMILIES, (7, 8, 9, 10), (16, 32), (0.5, 1.0, 2.0))
    with pytest.raises(ValueError, match=r"`episodes` to be \(low, high\) with 1 <= low <= high, got \(5, 3\)"):
        bank_configs(FAMILIES, (7,), (5, 3), (1.0,))


@pytest.fixture(scope="module")
def window_pool():  # noqa: ANN201 - a BankPool
    configs = bank_configs(FAMILIES, (0, 1, 2), (12, 16), (0.5, 2.0))
    return build_pool(make_suite("toy"), FAMILIES, (0, 1, 2), eval_variations=3, gold_variations=3,
                      bank_configs=configs), configs


def test_pool_records_bank_meta_and_hashes_it(window_pool, tmp_path: Path) -> None:  # noqa: ANN001
    pool, configs = window_pool
    assert pool.region_scheme == RegionScheme(kind="window", sessions=4, stride=2)
    for meta, config, seed in zip(pool.bank_meta, configs, pool.seeds):
        assert set(meta) == {"schedule", "episodes", "skill", "mix"}
        assert meta == plan_episodes(config, seed).meta(config) and meta["episodes"] == config.episodes
    other = dataclasses.replace(pool, bank_meta=(*pool.bank_meta[:-1], {**pool.bank_meta[-1], "skill": 9.0}))
    assert other.hash != pool.hash
    pool.save(tmp_path / "w.json.gz")
    assert load_pool(str(tmp_path / "w.json.gz"), pool.hash).bank_meta == pool.bank_meta


def test_window_keys_cover_each_bank_in_time_order(window_pool) -> None:  # noqa: ANN001
    pool, configs = window_pool
    for i, config in enumerate(configs):
        keys = pool.region_keys(i)
        assert [parse_window(k) for k in keys] == [(s, s + 3) for s in range(0, config.episodes - 3, 2)]
        region = select_region(pool.banks[i], keys[0])
        assert sum(region_task_mix(pool.banks[i], region).values()) == 4  # four episodes wrote it


def test_acquire_command_builds_an_interleaved_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "toy-windows.json.gz"
    assert main(["acquire", "--suite", "toy", "--schedule", "interleaved", "--seeds", "3", "4", "--episodes",
                 "10-12", "--skills", "2", "--eval-variations", "2", "--gold-variations", "2", "--out", str(out),
                 "--quiet"]) == 0
    summary = capsys.readouterr().out
    pool = load_pool(str(out))
    assert f'"regions": {sum(len(pool.region_keys(i)) for i in range(2))}' in summary
    assert [m["skill"] for m in pool.bank_meta] == [2.0, 2.0]
    assert main(["acquire", "--suite", "toy", "--schedule", "interleaved", "--episodes", "ten",
                 "--out", str(out)]) == 2
    assert "Expected --episodes to be N or LOW-HIGH" in capsys.readouterr().err


def test_shipped_window_pool_is_pinned_and_mixes_tasks() -> None:
    pool = load_pool("scienceworld-windows-v0", WINDOWS_POOL_HASH)
    assert len(pool.banks) == len(pool.bank_meta) == WINDOWS_POOL_BANKS and pool.region_scheme.kind == "window"
    keys = [(i, k) for i in range(len(pool.banks)) for k in pool.region_keys(i)]
    assert len(keys) == WINDOWS_POOL_REGIONS
    assert not set(pool.seeds) & set(load_pool("scienceworld-v0").seeds + load_pool("scienceworld-heldout-v0").seeds)
    mixed = sum(len(region_task_mix(pool.banks[i], select_region(pool.banks[i], k))) >= 2 for i, k in keys)
    assert 0.2 <= mixed / len(keys) < 1.0  # windows mix tasks, and some hold one
