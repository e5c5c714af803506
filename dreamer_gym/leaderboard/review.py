"""Needs review: a row whose banks read like a reference where its own evidence does not show them is shown and
never ranked until a recorded review clears it.

Whatever is public is assumed known to a submitter, including what they can type into their own code: a
consolidator that holds the held-out families' reference procedures, paraphrased, passes the lexical copy check
(:data:`~dreamer_gym.leaderboard.validate.NEAR_COPY`) and scores like the oracle. What it cannot fake is where its
text came from: it cites real trajectories of the region, but its steps and facts are the oracle's abstractions
of TRAIN gold paths, which the cited trajectories often do not show. So each region is judged on two numbers
(:class:`RegionCheck`), read by the track's suite reader as the board's columns are
(:mod:`~dreamer_gym.leaderboard.similarity`, :mod:`~dreamer_gym.leaderboard.grounding`):

* ``read``: the share of a reference region's claims (steps, forbidden steps, facts) that the region's entries
  make, its closest reference's. A share of the *reference's* claims, not a Jaccard of both sets, so keeping the
  whole region beside a paraphrase (or adding honest entries) does not dilute it;
* ``grounded``: the share of those shared claims that the trajectories cited by the entries making them show (a
  step taken by one of them, in any order; a fact in their actions or observations:
  :func:`~dreamer_gym.leaderboard.grounding.ground_entry`'s ``checked``). Only the shared claims count, so
  well-grounded kept entries do not lift it either.

A region is flagged when ``read >= SIMILAR_FROM``, ``grounded < GROUNDED_BELOW`` and at least ``MIN_UNHELD`` shared
claims are not shown; a row with any flagged region needs review, in both tiers (:func:`judge`, stored by ``validate``/``verify`` as ``record["review"]``). Reference
rows are not judged. Only a review recorded in the repository (``leaderboards/reviews/<track>/<results file
stem>.yaml``, :class:`Review`) decides such a row: ``cleared`` ranks it, ``rejected`` keeps it unranked with the
reviewer's reason; a review of another submission (its sha256) decides nothing (:func:`needs_review`). The two
thresholds and their margins on every committed row are in docs/leaderboard.md ("Needs review"); the board
shows the verdict with :func:`needs_review`.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard.grounding import held_claims, reader_of

# A region is flagged when it makes at least SIMILAR_FROM of a reference region's claims, its cited trajectories
# show less than GROUNDED_BELOW of those shared claims, and at least MIN_UNHELD of them are not shown. Set on every
# committed row and the red team (docs/leaderboard.md, "Needs review"; tests/red_team/test_review.py): where an
# honest row's region leaves any shared claim unshown it reads at most 0.50 of the reference, and where it reads
# 0.75 or more its evidence shows every shared claim; the paraphrases, `constant` and `bait` read 1.00 and their
# evidence shows at most 0.78 of it (lifespan regions: the oracle's animal lists), or all of it (identify-life-
# stages: the oracle's steps are the region's own; nothing there to catch, and nothing an honest reader could not
# write).
SIMILAR_FROM = 0.75
GROUNDED_BELOW = 0.9
# one claim the evidence does not show is never enough (a reference region of one or two claims, a step written
# in other words than the episode's)
MIN_UNHELD = 2
DECISIONS = ("cleared", "rejected")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class RegionCheck:
    """One region against one reference's region: of the reference's ``claims``, how many the region makes too
    (``shared``) and how many of those the trajectories cited by the entries making them do not show
    (``unheld``)."""

    region: int
    reference: str
    claims: int
    shared: int
    unheld: int

    @property
    def read(self) -> float:
        """The share of the reference's claims this region makes."""
        return self.shared / self.claims

    @property
    def grounded(self) -> float:
        """The share of the shared claims its evidence shows (1 where it shares none)."""
        return 1.0 - self.unheld / self.shared if self.shared else 1.0

    @property
    def flagged(self) -> bool:
        return self.read >= SIMILAR_FROM and self.grounded < GROUNDED_BELOW and self.unheld >= MIN_UNHELD

    def to_dict(self) -> dict[str, Any]:
        return {"region": self.region, "reference": self.reference, "read": round(self.read, 4),
                "grounded": round(self.grounded, 4), "claims": self.claims, "unheld": self.unheld}


def region_checks(regions: Sequence[dict[str, Any]], references: Sequence[tuple[str, Sequence[dict[str, Any]]]],
                  trajectories: dict[str, Any], suite: str, memo: dict[str, Any] | None = None,
                  ) -> list[RegionCheck | None]:
    """Each region against every reference's region of the same (bank, family); ``None`` where no reference
    region makes a claim. Where several references apply, a flagged one is reported first, then the closest.
    ``memo``: entries already grounded against these trajectories (:func:`~dreamer_gym.leaderboard.grounding.
    ground_region`)."""
    reads = reader_of(suite)
    memo = {} if memo is None else memo
    refs = [(name, {(r["bank"], r["family"]): frozenset(held_claims(r["emitted"], trajectories, reads, memo))
                    for r in ref_regions}) for name, ref_regions in references]
    out: list[RegionCheck | None] = []
    for j, region in enumerate(regions):
        mine = held_claims(region["emitted"], trajectories, reads, memo)
        candidates = []
        for name, by_region in refs:
            theirs = by_region.get((region["bank"], region["family"]), frozenset())
            if theirs:
                shared = [k for k in theirs if k in mine]
                candidates.append(RegionCheck(j, name, len(theirs), len(shared), sum(not mine[k] for k in shared)))
        out.append(max(candidates, key=lambda c: (c.flagged, c.read, c.unheld)) if candidates else None)
    return out


def judge(regions: Sequence[dict[str, Any]], references: Sequence[tuple[str, Sequence[dict[str, Any]]]],
          trajectories: dict[str, Any], suite: str, *, reference: bool = False,
          memo: dict[str, Any] | None = None) -> dict[str, Any]:
    """The verdict a results record stores as ``review``: ``needs_review``, the flagged ``regions`` (index, bank,
    family, reference, read, grounded, claims, unheld), a ``reason`` in words, the thresholds, and per region
    ``[claims, shared, unheld]`` against its closest reference (``None`` without a reference region), so a reader
    can see how close the row came. A reference row (``reference``) is not judged: it *is* what the rule compares
    with."""
    base = {"similar_from": SIMILAR_FROM, "grounded_below": GROUNDED_BELOW, "min_unheld": MIN_UNHELD}
    if reference:
        return {"needs_review": False, "regions": [], "reason": "a reference row is not judged", **base,
                "per_region": []}
    checks = region_checks(regions, references, trajectories, suite, memo)
    flagged = [c for c in checks if c is not None and c.flagged]
    listed = [{**c.to_dict(), "bank": regions[c.region]["bank"], "family": regions[c.region]["family"]}
              for c in flagged]
    if not references:
        reason = "no reference on this track: nothing to compare with"
    elif flagged:
        worst = min(flagged, key=lambda c: c.grounded)
        reason = (f"{len(flagged)} of {len(regions)} regions read like reference {worst.reference!r} (at least "
                  f"{SIMILAR_FROM:.2f} of its claims) while their cited trajectories show less than "
                  f"{GROUNDED_BELOW:.2f} of those claims (lowest {worst.grounded:.2f}, region {worst.region}: "
                  f"{worst.unheld} of {worst.shared} not shown): text the region does not show, as typed-in task "
                  "knowledge is; a recorded review decides (leaderboards/reviews/README.md)")
    else:
        reason = "no region reads like a reference without its evidence showing it"
    return {"needs_review": bool(flagged), "regions": listed, "reason": reason, **base,
            "per_region": [None if c is None else [c.claims, c.shared, c.unheld] for c in checks]}


@dataclass(frozen=True)
class Review:
    """A reviewer's decision on one flagged submission, recorded in the repository (``leaderboards/reviews/<track>/
    <results file stem>.yaml``; the format is leaderboards/reviews/README.md). It names the submission by its
    sha256, so a resubmission under the same name is not covered by an old decision."""

    track: str
    row: str
    submission_sha256: str
    reviewer: str
    date: str
    decision: str
    reason: str

    def __post_init__(self) -> None:
        for name in ("track", "row", "reviewer", "reason"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"review `{name}`: expected a non-empty string, got {value!r}")
        if not isinstance(self.submission_sha256, str) or not _SHA256.match(self.submission_sha256):
            raise ConfigError(f"review `submission_sha256`: expected the 64 lower-case hex digits of the results "
                              f"record's `submission_sha256`, got {self.submission_sha256!r}")
        try:
            dt.date.fromisoformat(str(self.date))
        except ValueError:
            raise ConfigError(f"review `date`: expected an ISO date (2026-12-08), got {self.date!r}") from None
        if self.decision not in DECISIONS:
            raise ConfigError(f"review `decision`: expected one of {DECISIONS}, got {self.decision!r}")

    @classmethod
    def load(cls, path: Path) -> Review:
        """A review file; its folder is its track (``reviews/<track>/...``)."""
        data = yaml.safe_load(Path(path).read_text())
        fields = {"row", "submission_sha256", "reviewer", "date", "decision", "reason"}
        if not isinstance(data, dict) or set(data) != fields:
            got = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise ConfigError(f"review {path}: expected exactly the fields {sorted(fields)}, got {got}")
        return cls(track=Path(path).parent.name, **{k: str(v) for k, v in data.items()})


def load_reviews(folder: Path) -> dict[str, Review]:
    """Every review under ``folder`` (``<track>/*.yaml``), keyed by the submission sha256 it decides; two reviews
    of one submission are a ConfigError (which one counts would depend on file order)."""
    out: dict[str, Review] = {}
    for path in sorted(Path(folder).glob("*/*.yaml")):
        review = Review.load(path)
        if review.submission_sha256 in out:
            raise ConfigError(f"review {path}: submission {review.submission_sha256[:12]} already has a review "
                              f"({out[review.submission_sha256].row!r}); keep one decision per submission")
        out[review.submission_sha256] = review
    return out


@dataclass(frozen=True)
class ReviewStatus:
    """Where a row stands: ``state`` is ``clear`` (nothing flagged), ``needs review``, ``cleared`` or ``rejected``
    (a recorded review decided), ``reference`` (not judged) or ``unjudged`` (a results file written before the
    rule, never ranked: judge it). ``ranked``: whether the board may rank it."""

    state: str
    ranked: bool
    regions: tuple[dict[str, Any], ...]
    reason: str
    review: Review | None = None


def needs_review(record: Mapping[str, Any], reviews: Mapping[str, Review]) -> ReviewStatus:
    """The verdict stored in ``record`` (``review``) combined with the recorded reviews: what the board shows
    beside the row, and whether it ranks it. A review counts only for the submission (sha256), track and row it
    names."""
    verdict = record.get("review")
    if record.get("consolidator", {}).get("kind") == "reference":
        return ReviewStatus("reference", False, (), "a reference row is not judged")
    if not isinstance(verdict, Mapping):
        # a file written before the rule ranks nothing until judged: `dreamer-gym leaderboard columns` judges it
        return ReviewStatus("unjudged", False, (), "results file written before the review rule: judge it with "
                            "`dreamer-gym leaderboard columns` (or re-validate it)")
    regions = tuple(verdict.get("regions", ()))
    if not verdict.get("needs_review"):
        return ReviewStatus("clear", True, regions, str(verdict.get("reason", "")))
    review = reviews.get(str(record.get("submission_sha256")))
    name = record.get("consolidator", {}).get("name")
    if review is None or review.track != record.get("track") or review.row != name:
        return ReviewStatus("needs review", False, regions, str(verdict["reason"]))
    said = f"{review.decision} by {review.reviewer} on {review.date}: {review.reason}"
    return ReviewStatus(review.decision, review.decision == "cleared", regions, said, review)
