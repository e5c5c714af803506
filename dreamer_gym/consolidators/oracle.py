"""The oracle consolidator (upper reference) and the decoys that check the reward's validity.

The oracle knows nothing of any suite: it writes what the suite's :class:`~dreamer_gym.suites.SuiteSpec`
holds for the region's family, ``spec.procedures[family]`` (abstractions of TRAIN gold paths written by
hand, in the open, in each suite's module: navigation prefixes dropped, variation-specific values
replaced by ``<slots>``) and ``spec.oracle_facts(family, pool.train_gold)`` (facts mined from the
TRAIN gold paths programmatically). Because the oracle and the memory-following agent come from the
same hands, two decoys check that the reward measures content and not format:

* ``prose-oracle``: the oracle's procedures rephrased as prose; must score like the oracle;
* ``wrong-procedures``: well-formatted procedures with the wrong steps; must score below the raw region.

**Privileged references.** The oracle, its decoys and the red-team policies built on them read the TRAIN
gold paths, which the env no longer holds (it keeps only the banks and the TRAIN trajectories; the
rest lives in the reward service). They get them as :class:`ReferenceEvidence`, loaded from the pool
file by whoever runs them (a study, the CLI's reference rows, a track's reference run): reading that
file is the privilege. Contenders get the env only; the leaderboards list references apart from them.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from dreamer_gym.consolidators.base import call
from dreamer_gym.memory import parse_window
from dreamer_gym.errors import ConfigError
from dreamer_gym.suites import OracleProcedure, SuiteSpec, get_suite_spec


@dataclass(frozen=True)
class ReferenceEvidence:
    """What a privileged reference reads that a contender cannot: the pool's TRAIN gold paths."""

    pool_hash: str
    train_gold: dict[str, dict[int, tuple[str, ...]]]  # family -> variation -> gold path

    @classmethod
    def load(cls, pool: str, pool_hash: str | None = None) -> ReferenceEvidence:
        """Read the gold paths from the pool file (``ConsolidationConfig.pool``), checking its hash."""
        from dreamer_gym.pool import load_pool

        full = load_pool(pool, pool_hash)
        return cls(full.hash, dict(full.train_gold))


def _spec(env: gym.Env) -> SuiteSpec:
    spec = get_suite_spec(env.unwrapped.config.suite)
    if not spec.has_gold_paths:
        raise ConfigError(f"Suite {spec.name!r} has no gold paths, so the oracle and its decoys cannot run on it; "
                          "use a suite whose SuiteSpec has has_gold_paths=True")
    return spec


def _family_task(env: gym.Env, family: str) -> str:
    """The task's goal as the suite words it on TRAIN variations ("find a(n) living thing")."""
    texts = env.unwrapped.pool.trajectories.values()
    for traj in sorted(texts, key=lambda t: t.id):
        if traj.family == family:
            return traj.task_description.split(".")[0].replace("Your task is to ", "").strip()
    return family.replace("-", " ")


def _goal(env: gym.Env, family: str, procedure: OracleProcedure | None) -> str:
    """A procedure's goal template, or the family's task text where the procedure has none."""
    if procedure is not None and procedure.goal is not None:
        return procedure.goal
    return _family_task(env, family)


def _anchor(info: dict[str, Any], family: str | None = None) -> list[str]:
    """Region entries an oracle entry cites: procedures first; with ``family``, that family's only (a window
    region files a new entry under the family its evidence was written for)."""
    region = [e for e in info["region"] if family is None or e.get("family") == family] or info["region"]
    procs = [e["id"] for e in region if e["kind"] == "procedure"]
    return (procs or [e["id"] for e in region])[:8]


def region_families(info: dict[str, Any]) -> list[str]:
    """The families a region holds: its own on a family region, every one written in a window region."""
    if parse_window(info["family"]) is None:
        return [info["family"]]
    return sorted({e["family"] for e in info["region"]})


class OracleConsolidator:
    """Replaces the region with its family's abstract procedure and facts from the suite's spec.

    ``evidence``: the TRAIN gold paths; by default loaded from the env's pool file on first use.
    """

    name = "oracle"

    def __init__(self, evidence: ReferenceEvidence | None = None) -> None:
        self.evidence = evidence

    def train_gold(self, env: gym.Env) -> dict[str, dict[int, tuple[str, ...]]]:
        """The gold paths of the env's pool (loaded once per pool, in this process: the privilege)."""
        pool_hash = env.unwrapped.pool.hash
        if self.evidence is None or self.evidence.pool_hash != pool_hash:
            self.evidence = ReferenceEvidence.load(env.unwrapped.config.pool, pool_hash)
        return self.evidence.train_gold

    def texts(self, env: gym.Env, family: str) -> list[tuple[str, str]]:
        """``(kind, text)`` of every entry the oracle writes for ``family``."""
        spec = _spec(env)
        procedure = spec.procedures.get(family)
        facts = spec.oracle_facts(family, self.train_gold(env)) if spec.oracle_facts is not None else []
        if procedure is None:
            return [("fact", f) for f in facts]
        # one entry: the facts that fill the procedure's slots travel with it, so retrieval cannot show the
        # steps without them (other regions' raw notes crowd a separate fact out of the agent's top k)
        return [("procedure", self.procedure_text(_goal(env, family, procedure), procedure.steps, facts))]

    def procedure_text(self, goal: str, steps: str, facts: list[str]) -> str:
        return " ".join([f"To {goal}: {steps}.", *facts])

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        if not info["region"]:
            yield call("commit")
            return
        windows = parse_window(info["family"]) is not None
        for family in region_families(info):
            for kind, text in self.texts(env, family):
                yield call("emit", kind=kind, text=text, provenance=_anchor(info, family if windows else None))
        yield call("commit")


def as_prose(steps_text: str) -> str:
    """Rephrase a comma-separated procedure as sentences with varied connectives."""
    steps = [s.strip() for s in steps_text.split(",") if s.strip()]
    joiners = ["First, {}.", "After that, {}.", "Next you should {}.", "Then {}.", "Once done, {}."]
    sentences = [joiners[0].format(steps[0])] if steps else []
    for i, step in enumerate(steps[1:], start=1):
        sentences.append(joiners[1 + (i % (len(joiners) - 1))].format(step))
    return " ".join(sentences)


class ProseOracleDecoy(OracleConsolidator):
    """The oracle's entries with each procedure rephrased as prose: must score like the oracle."""

    name = "prose-oracle"

    def procedure_text(self, goal: str, steps: str, facts: list[str]) -> str:
        return " ".join([f"To {goal}. " + as_prose(steps), *facts])


class WrongProcedureDecoy(OracleConsolidator):
    """Well-formatted, on-topic procedures whose steps belong to another family: the goal of this family,
    the steps of the next family in sorted order of the suite's procedures (a family without a procedure
    gets the first family's steps)."""

    name = "wrong-procedures"

    def texts(self, env: gym.Env, family: str) -> list[tuple[str, str]]:
        procedures = _spec(env).procedures
        names = sorted(procedures)
        if not names:
            return []
        other = names[(names.index(family) + 1) % len(names)] if family in procedures else names[0]
        return [("procedure", f"To {_goal(env, family, procedures.get(family))}: {procedures[other].steps}.")]
