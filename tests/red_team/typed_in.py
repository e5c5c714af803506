"""Typed-in task knowledge, the red team's way: the oracle's entries paraphrased (what the reader takes stays, the
wording goes), and a consolidator module whose *source* holds them, written to a folder as a submitter would.

Shared by tests/red_team/test_grounding_columns.py (the reader-level similarity column) and
tests/red_team/test_review.py (the needs-review rule, both tiers).
"""
from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dreamer_gym.agents.reading import extract_actions, fact_items
from dreamer_gym.memory import MemoryEntry

_CONNECTIVES = ("Begin with", "Afterwards", "Subsequently", "Once that is done", "Following this", "Later")


def paraphrase_text(text: str) -> str:
    """The same steps, slots and listed facts in other words: what the reader takes stays, the wording goes.
    A list keeps the name of what it lists ("... animal with longest life span: brown bear, ..."): that is how the
    reader fills the step's ``<slot>`` from it, so the paraphrase plays like the original."""
    steps = extract_actions(text)
    lines = ["Aim \u2014 get this family of tasks right, as the bank's best episodes did."]
    lines += [f"{_CONNECTIVES[i % len(_CONNECTIVES)]} {step}." for i, step in enumerate(steps)]
    for sentence in re.split(r"\.\s+|\.$", text):
        head, colon, listed = sentence.partition(":")
        items = [i for i in fact_items([f"{head}:{listed}"]) if " @ " not in i] if colon else []
        if items and not extract_actions(listed):
            named = re.sub(r"^(?:examples of )?(?:an? |the )?", "", head.strip().lower())
            lines.append(f"Good candidates, {named}: " + ", ".join(items) + ".")
    return " ".join(lines)


def paraphrase(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with its text paraphrased (and its id, the hash of its content, recomputed)."""
    return MemoryEntry.from_dict({**entry, "text": paraphrase_text(entry["text"])}).to_dict()


def word_overlap(a: str, b: str) -> float:
    """Word-set Jaccard, as the lexical copy check (validate.NEAR_COPY) measures it."""
    x, y = set(a.lower().split()), set(b.lower().split())
    return len(x & y) / len(x | y)


def paraphrased_texts(reference: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Family -> ``(kind, paraphrased text)`` of a reference submission's new entries (its first region of each
    family: the oracle writes the same entries for every region of a family)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for region in reference["tracks"][0]["regions"]:
        if region["family"] not in out and region["emitted"]:
            out[region["family"]] = [(e["kind"], paraphrase_text(e["text"])) for e in region["emitted"]]
    return out


_MODULE = '''
"""A consolidator with the held-out families' reference procedures typed into its source, paraphrased."""
from dreamer_gym.consolidators.base import call

TEXTS = {texts!r}


def anchor(info):
    """The region's procedures first (the entries it cites), as the oracle cites them."""
    procedures = [e["id"] for e in info["region"] if e["kind"] == "procedure"]
    return (procedures or [e["id"] for e in info["region"]])[:8]


class Paraphrase:
    """Every region: its family's typed-in entries, the region dropped."""

    def actions(self, env, obs, info):
        if info["region"]:
            for kind, text in TEXTS.get(info["family"], ()):
                yield call("emit", kind=kind, text=text, provenance=anchor(info))
        yield call("commit")

'''


def write_attack(folder: Path, texts: Mapping[str, Sequence[tuple[str, str]]], module: str = "typed_in_attack") -> str:
    """Write the attacker's module into ``folder``; returns its ``module`` name (``module:Paraphrase`` is the
    consolidator)."""
    folder.mkdir(parents=True, exist_ok=True)
    source = textwrap.dedent(_MODULE).format(texts={k: [list(t) for t in v] for k, v in texts.items()})
    (folder / f"{module}.py").write_text(source)
    folder.chmod(0o755)  # the sandbox's own uid reads what any user may (pytest makes its folders 0700)
    (folder / f"{module}.py").chmod(0o644)
    return module


def margin_line(name: str, checks: Sequence[Any]) -> str:
    """One row of docs/leaderboard.md's needs-review margins table ("Needs review"), from
    :func:`~dreamer_gym.leaderboard.review.region_checks`: the highest share of a reference region it reads, the
    lowest grounding where it reads at least SIMILAR_FROM, the highest share it reads where some shared claim is
    not shown, the most shared claims one region leaves unshown, and the regions flagged."""
    from dreamer_gym.leaderboard.review import SIMILAR_FROM

    done = [c for c in checks if c is not None]
    close = [c.grounded for c in done if c.read >= SIMILAR_FROM]
    unshown = [c.read for c in done if c.unheld]
    return (f"| {name} | {len(done)} | {max((c.read for c in done), default=0):.2f} | "
            f"{f'{min(close):.2f}' if close else '-'} | {f'{max(unshown):.2f}' if unshown else '-'} | "
            f"{max((c.unheld for c in done), default=0)} | {sum(c.flagged for c in done)} |")
