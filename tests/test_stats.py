"""The one statistics module (dreamer_gym/stats.py): the crossed bootstrap resamples banks and TEST variations
independently within families on the same draws for every row, a plain matrix resamples banks exactly as before,
paired CIs, rank intervals on matrices with a known order, and the MDDs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dreamer_gym import stats as S
from dreamer_gym.leaderboard.aggregate import Normaliser, aggregate_rows
from dreamer_gym.leaderboard.board import load_results
from dreamer_gym.leaderboard.ranking import rank_label, rank_rows

RESULTS = Path(__file__).parent.parent / "leaderboards" / "results"


@pytest.fixture(scope="module")
def scienceworld() -> tuple[Normaliser, dict[str, dict]]:
    rows = {r["consolidator"]["name"]: r for r in load_results(RESULTS)["scienceworld"] if r["tier"] == "re-scored"}
    return Normaliser.from_results(rows["empty"], rows["oracle"]), rows


def test_a_rows_cells_average_to_the_boards_region_matrix(scienceworld: tuple) -> None:
    norm, rows = scienceworld
    for name in ("dedupe", "keep-all", "random"):
        cells = norm.cells(rows[name])
        assert np.allclose(cells.matrix(), norm.matrix(rows[name])[0])
        # scienceworld protocol 3: 40 banks, every TEST variation played once in every region (5 or 20 a family)
        assert cells.layout == ((40, 5), (40, 20), (40, 20), (40, 20))
        assert all((w == 1).all() for w in cells.weights)


def test_a_plain_matrix_resamples_banks_alone_with_the_draws_of_before() -> None:
    """One cell a region: the bootstrap is the banks-within-families one the board used before this module, on the
    same random draws from the same seed (so the studies' committed reward CIs reproduce)."""
    m = np.random.default_rng(0).normal(size=(7, 3))
    values = S.bootstrap_distribution(S.mean, m, reps=300, seed=11)
    picks = np.random.default_rng(11).integers(7, size=(300, 7, 3))
    assert np.allclose(values, m[picks, np.arange(3)].mean(axis=(1, 2)))


def test_variations_shared_by_every_bank_widen_the_crossed_ci_only() -> None:
    """Every bank plays the same 4 variations and differs from the others by nothing: banks alone see no spread,
    the crossed bootstrap sees the variations' (a hard variation lowers every bank at once)."""
    effect = np.array([0.4, -0.2, 0.1, -0.3])
    cells = S.Strata((np.tile(effect, (10, 1)),), (np.ones((10, 4)),))
    assert S.stratified_bootstrap(S.mean, cells.matrix()) == (pytest.approx(-0.0), pytest.approx(-0.0))
    lo, hi = S.stratified_bootstrap(S.mean, cells)
    assert lo < effect.mean() < hi and hi - lo > 0.2
    # the resampled family mean is the mean of 4 variations drawn with replacement: its SD is sd(effect) / 2
    values = S.bootstrap_distribution(S.mean, cells, reps=20000, seed=1)
    assert values.std() == pytest.approx(effect.std() / 2, rel=0.03)


def test_every_row_gets_the_same_draws_so_one_pass_equals_each_alone(scienceworld: tuple) -> None:
    norm, rows = scienceworld
    x, y, z = (norm.cells(rows[n]) for n in ("dedupe", "keep-all", "random"))
    together, replicates = aggregate_rows({"x": x, "y": y, "z": z}, baseline=z)
    alone, _ = aggregate_rows({"x": x}, baseline=z)
    assert together["x"] == alone["x"]
    assert together["x"]["iqm_ci"] == S.stratified_bootstrap(S.iqm, x)
    pairs = S.pairwise([x, y, z], values=np.stack([replicates[n] for n in "xyz"], axis=1))
    diff, ci = S.paired_difference(x, y)
    assert pairs.difference(0, 1) == pytest.approx(diff) and pairs.ci(0, 1) == pytest.approx(ci)
    assert pairs.ci(1, 0) == pytest.approx((-ci[1], -ci[0]))
    assert S.paired_difference(x, x) == (0.0, (0.0, 0.0))
    with pytest.raises(ValueError, match="same regions"):
        S.paired_difference(x, S.Strata.from_matrix(x.matrix()))


def _known_order(means: list[float], noise: float, seed: int = 0) -> list[np.ndarray]:
    """(banks x families) matrices: a shared bank effect (paired rows), each row's mean, and noise of SD ``noise``
    with mean 0 in every family (so two rows' mean difference is exactly the difference of their ``means``)."""
    rng = np.random.default_rng(seed)
    shared = rng.normal(size=(30, 3))
    out = []
    for mu in means:
        e = rng.normal(size=(30, 3))
        e = (e - e.mean(axis=0)) / e.std(axis=0) * noise
        out.append(shared + mu + e)
    return out


def test_rank_intervals_on_a_known_order() -> None:
    rows = _known_order([1.0, 0.5, 0.5, 0.0, -1.0], noise=0.05)
    intervals = S.rank_intervals(S.pairwise(rows, S.mean))
    assert intervals[0] == (1, 1) and intervals[3] == (4, 4) and intervals[4] == (5, 5)
    assert intervals[1] == intervals[2] == (2, 3)  # two equal rows: either order
    names = [f"r{i}" for i in range(5)]
    ranking = rank_rows(names, dict(zip(names, map(S.Strata.from_matrix, rows))), S.mean)
    assert ranking.labels == ["1", "2-3", "2-3", "4", "5"]
    assert [c.separated for c in ranking.comparisons] == [True, False, True, True]
    assert rank_label((3, 3)) == "3" and rank_label((1, 4)) == "1-4"


def test_rank_intervals_do_not_chain_rows_that_separate() -> None:
    """Eleven rows 0.02 apart: no neighbour separates from the next (a chain of ties would put all eleven in one
    shared rank), but rows 0.1 apart do, so the top row's interval and the bottom row's do not meet."""
    rows = _known_order([0.02 * i for i in range(10, -1, -1)], noise=0.15)
    p = S.pairwise(rows, S.mean)
    assert not any(p.lower[i, i + 1] > 0 for i in range(10))
    intervals = S.rank_intervals(p)
    assert intervals[0][1] < intervals[-1][0]
    assert all(best <= i + 1 <= worst for i, (best, worst) in enumerate(intervals))


def test_mdd_is_the_z_formula_and_a_draws_mdd_follows_its_banks() -> None:
    assert S.mdd(0.1) == pytest.approx(0.280158, abs=1e-6) and S.mdd(0.0) == 0.0
    m = np.random.default_rng(2).normal(scale=[0.1, 0.3], size=(40, 2))
    se = np.sqrt(m.var(axis=0, ddof=1).sum() / 4 * (1 / 10 + 1 / 40))
    assert S.draw_mdd(m, 10) == pytest.approx(S.mdd(se))
    assert S.draw_mdd(m, 40) < S.draw_mdd(m, 10) and S.draw_mdd(m[:1], 10) is None
    x, y = _known_order([0.1, 0.0], noise=0.2)
    assert S.paired_se(x, y, S.mean_difference, banks=120) < S.paired_se(x, y, S.mean_difference)
