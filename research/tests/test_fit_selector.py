"""The frozen rule selector is fitted reproducibly from the committed training study, and the package plays it."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from dreamer_gym.consolidators import make_consolidator
from research.fit_selector import fit

ROOT = Path(__file__).parent.parent.parent
STUDY = ROOT / "research" / "results" / "issue31" / "learnability-train-e20" / "learnability.json.gz"


def test_the_committed_selectors_are_what_the_committed_study_fits() -> None:
    study = json.loads(gzip.decompress(STUDY.read_bytes()))
    for suffix, seed in [("", None), *((f"-seed{s}", s) for s in range(5))]:
        committed = json.loads((ROOT / "baselines" / "rule-selector" / f"scienceworld-v1-e20{suffix}.json").read_text())
        again = fit(study, depth=2, seed=seed)
        assert again["tree"] == committed["tree"] and again["fitted_on"]["bootstrap_seed"] == seed
    assert fit(study, 2, seed=0)["tree"] != fit(study, 2)["tree"]  # a seed resamples the training regions
    policy = make_consolidator(f"selector:{ROOT / 'baselines' / 'rule-selector' / 'scienceworld-v1-e20.json'}")
    assert set(policy.rules) == set(study["config"]["rules"])
