"""The track power computation on the committed results (dreamer_gym/studies/track_power.py, docs/power.md): the
IQM's MDD on every neighbouring pair of ranked rows with the board's own bootstrap (banks and TEST variations
resampled within families), the sizing model, and the generated tables of docs/power.md and docs/leaderboard.md."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dreamer_gym.errors import ConfigError
from dreamer_gym.stats import Strata, mean_difference, paired_se
from dreamer_gym.studies.track_power import (
    DOC_TRACKS,
    DOCS,
    GENERATED,
    TrackPowerConfig,
    _pair_record,
    docs_blocks,
    fill_blocks,
    load_track_data,
    mdd,
    predicted_se,
    run,
    sizing,
    variance_components,
)

RESULTS = Path(__file__).resolve().parents[1] / "leaderboards" / "results"


# The docs' generated tables are the summary and the neighbouring pairs, made at the default settings; no sizing
# table is among them (test_the_docs_power_tables_are_generated_from_the_committed_rows checks so), so the docs'
# records are made with one sizing design (its bootstraps at 8 bank counts were a third of the cost) and the sizing
# table is checked on its own at fewer replicates (SIZING).
DOCS_CONFIG = TrackPowerConfig(design_banks=(3,), design_episodes=(0,), design_families=(0,))
SIZING = TrackPowerConfig(reps=500)


@pytest.fixture(scope="module")
def built() -> tuple[dict, dict]:
    """Every shipped track's record at the default settings but the sizing designs (what the docs' generated tables
    are made from), and the track data each record was made from (``load_track_data``'s own, as ``run`` loaded it:
    its board's bootstrap is most of the cost, so it is built once)."""
    from dreamer_gym.studies import track_power

    loaded: dict[str, tuple[Path, object]] = {}

    def load_and_keep(track_name: str, results_dir: Path):
        loaded[track_name] = (Path(results_dir), load_track_data(track_name, results_dir))
        return loaded[track_name][1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(track_power, "load_track_data", load_and_keep)
        records = run(DOC_TRACKS, config=DOCS_CONFIG, progress=False)
    return records, loaded


@pytest.fixture(scope="module")
def records(built: tuple[dict, dict]) -> dict:
    return built[0]


def test_the_docs_power_tables_are_generated_from_the_committed_rows(records: dict) -> None:
    """docs/power.md and docs/leaderboard.md hold the generated blocks byte for byte (`dreamer-gym power --track
    scienceworld alfworld-gen miniwob --write-docs` rewrites them after a results file changes)."""
    blocks = docs_blocks(records)
    found = set()
    for path in DOCS:
        text = path.read_text()
        names = [m["name"] for m in GENERATED.finditer(text)]
        assert names, f"{path} has no generated power block"
        found.update(names)
        assert fill_blocks(text, blocks) == text, f"{path}: a generated block is stale; rerun --write-docs"
    assert {"power-summary", "power-pairs-scienceworld"} <= found <= set(blocks)
    # what DOCS_CONFIG changes (the sizing designs) is in no generated block of the docs
    assert not any(name.startswith("power-sizing") for name in found)


def test_every_neighbouring_pair_is_the_boards_comparison_with_its_mdd(built: tuple[dict, dict]) -> None:
    records, loaded = built
    r = records["scienceworld"]
    assert (r["regions"], r["episodes"], r["distinct_episodes"], r["banks"]) == (160, 2600, 65, 40)
    assert r["caps"] == {"identify-life-stages-1": 5, "lifespan-longest-lived": 20,
                         "lifespan-longest-lived-then-shortest-lived": 20, "lifespan-shortest-lived": 20}
    results_dir, data = loaded["scienceworld"]  # the board of the committed rows the record was made from
    assert results_dir.resolve() == RESULTS.resolve()
    board = data.board
    assert [(p["row"], p["above"], p["mdd_iqm"]) for p in r["pairs"]] == [(c.name, c.above, c.mdd)
                                                                          for c in board.comparisons]
    assert len(r["pairs"]) == len(r["rows"]) - 1 == 17
    # resampling the TEST variations too can only add spread: on the median pair, and for most pairs
    crossed, banks = (np.median([p[k] for p in r["pairs"]]) for k in ("mdd_iqm", "mdd_iqm_banks"))
    assert crossed > banks and crossed > 0.05  # the IQM: the board's measure, past the 0.05 the track was sized for
    assert r["mdd_iqm_max"] == max(p["mdd_iqm"] for p in r["pairs"])
    y = r["yardstick"]
    spreads = sorted(p["spread"] for p in r["pairs"] if p["spread"] > 0)
    assert y["spread"] == spreads[len(spreads) // 2]


@pytest.fixture(scope="module")
def sized(built: tuple[dict, dict]) -> tuple[dict, dict]:
    """The scienceworld record's sizing at the default designs (SIZING's replicates), and its yardstick pair's
    record at the same replicates."""
    records, loaded = built
    r, data = records["scienceworld"], loaded["scienceworld"][1]
    pair = next(c for c in data.board.comparisons if (c.name, c.above) == (r["yardstick"]["row"],
                                                                            r["yardstick"]["above"]))
    x, y = data.cells[pair.name], data.cells[pair.above]
    return sizing(data, x, y, SIZING), _pair_record(pair, x, y, SIZING)


def test_the_sizing_bootstrap_at_the_tracks_own_banks_is_the_pairs_mdd(sized: tuple[dict, dict]) -> None:
    s, yardstick = sized
    table = s["table"]
    own = next(t for t in table if t["banks"] == 40 and "mdd_bootstrap" in t)
    assert own["mdd_bootstrap"] == pytest.approx(yardstick["mdd_mean"])
    for key in ("mdd_bootstrap", "mdd_iqm_bootstrap"):
        boot = [t[key] for t in table if key in t]
        assert len(boot) == 8 and boot == sorted(boot, reverse=True) and boot[0] > boot[-1]
    for key in ("mdd", "mdd_track"):
        by_banks = [t[key] for t in table if t["episodes_per_region"] == 20 and t["families"] == 4]
        assert by_banks == sorted(by_banks, reverse=True) and by_banks[0] > by_banks[-1]
        assert all(t[key] > u[key] for t in table for u in table
                   if (t["banks"], t["episodes_per_region"]) == (u["banks"], u["episodes_per_region"])
                   and t["families"] < u["families"])


def test_crossed_variations_set_a_floor_that_banks_cannot_lower() -> None:
    # every bank plays the same 5 variations and differs only by variation: the cells are one effect, five times
    m = np.tile(np.array([0.4, -0.2, 0.1, 0.0, -0.3]), (3, 1))
    c = variance_components(m)
    assert c["bank"] == 0.0 and c["residual"] == pytest.approx(0.0, abs=1e-12) and c["variation"] > 0
    family = [predicted_se({"f": c}, {"f": 5}, b, 5, 1) for b in (3, 30, 3000)]
    assert family[0] == pytest.approx(family[-1]) == pytest.approx(np.sqrt(c["variation"] / 5))
    # the same five variations are the whole track: played by every bank, they leave no doubt about it
    assert predicted_se({"f": c}, {"f": 5}, 3, 5, 1, population="track") == pytest.approx(0.0, abs=1e-8)
    # the crossed bootstrap sees the variation spread; banks alone see none
    d, zero = Strata((m,), (np.ones_like(m),)), Strata((np.zeros_like(m),), (np.ones_like(m),))
    assert paired_se(d, zero, mean_difference) > 0.1 and paired_se(d.matrix(), zero.matrix(), mean_difference) < 1e-12


def test_deterministic_under_a_seed(built: tuple[dict, dict]) -> None:
    data = built[1]["alfworld-gen"][1]  # load_track_data("alfworld-gen", RESULTS), as the records were made from
    x, y = (data.cells[n] for n in list(data.cells)[:2])
    assert paired_se(x, y, reps=1000, seed=7) == paired_se(x, y, reps=1000, seed=7)
    assert paired_se(x, y, reps=1000, seed=7) != paired_se(x, y, reps=1000, seed=8)
    assert paired_se(x, x, reps=1000, seed=7) == 0.0
    assert mdd(0.1) == pytest.approx(0.280158, abs=1e-6)


def test_every_shipped_track_has_a_record(records: dict) -> None:
    for track in DOC_TRACKS:
        r = records[track]
        assert r["mdd_iqm_median"] > 0 and not set(r["flagged"]) & set(r["families"])
        # miniwob keeps a flat family the board leaves out; alfworld-gen (protocol 3) holds its 4 non-flat ones only
        assert bool(r["flagged"]) == (track == "miniwob")


def test_errors_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="`reps` >= 100"):
        TrackPowerConfig(reps=10)
    with pytest.raises(ConfigError, match="`write_docs` writes the docs' tables at the default settings"):
        TrackPowerConfig(reps=500, write_docs=True)
    with pytest.raises(ConfigError, match="no track 'nope'"):
        run(["nope"], RESULTS, TrackPowerConfig(reps=100), progress=False)
    with pytest.raises(ConfigError, match=r"no built-in \['empty', 'oracle'\] row"):
        run(["scienceworld"], tmp_path, TrackPowerConfig(reps=100), progress=False)
    with pytest.raises(ConfigError, match="drop --results"):
        run(["alfworld-gen"], RESULTS, TrackPowerConfig(write_docs=True), progress=False)


def test_power_track_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dreamer_gym.cli import main

    out = tmp_path / "power.json"
    assert main(["power", "--track", "alfworld-gen", "--reps", "500", "--design-banks", "3", "10", "--quiet",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "IQM MDD at 80% power" in text and "| banks | episodes/region |" in text
    record = json.loads(out.read_text())["tracks"]["alfworld-gen"]
    assert record["regions"] == 60 and record["config"]["reps"] == 500 and record["mdd_iqm_median"] > 0
