"""Board rows that cannot collide or lie about their kind.

A row's file name is the slug of its name, so two names with one slug (``dedupe!`` and ``dedupe``) would share a
file: a results file that already holds another submission is never overwritten (:func:`check_row_free`). The
names of the package's built-in rows are theirs alone, and a row is *built-in* (``builtin: RULE`` in its results
file) only when the board re-ran the package's own rule and it reproduced the submitted banks
(:func:`builtin_rule`; ``validate.rerun``). The normalisation anchors (``empty``, ``oracle``) and the best fixed
baseline come only from such rows (``board.build_board``), never from what a submitter calls their row.

A row's name is ASCII lower case (:data:`NAME_PATTERN`, :func:`check_name`): ``dеdupe`` with a Cyrillic ``е``
or a fullwidth ``ｄｅｄｕｐｅ`` would otherwise stand beside the row it imitates under a file of its own. A verified
run's file (``NAME.verified.json``) is collision-checked too (:func:`check_verified_free`).
"""
from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

from dreamer_gym.consolidators.context_rules import CONTEXT_RULES
from dreamer_gym.consolidators.op_rule import OP_RULES
from dreamer_gym.leaderboard.runner import REFERENCES
from dreamer_gym.leaderboard.submission import SubmissionError

# the package's rules that learn nothing: `kind: fixed` is one of these, re-run by the board; the best fixed
# baseline of the aggregates is the best of their rows. The whole-region op rules (`rule:merge-all`, ...) are
# the constants of the learnability study (docs/learnability.md): on the board, a learner is compared with them.
FIXED_RULES: tuple[str, ...] = ("keep-all", "empty", "dedupe", "blind", "consensus", "random",
                                *(f"rule:{name}" for name in OP_RULES),
                                # issue 40: the bank-context and synthesis rules (tool contract 2 ids only)
                                *(f"rule:{name}" for name in CONTEXT_RULES))
# the normalising rows: empty 0, oracle 1 (aggregate.Normaliser)
ANCHORS: tuple[str, str] = ("empty", "oracle")


# what a row's name may be: ASCII lower-case letters and digits, then also `:` (`rule:merge-all`), `.`, `_`, `-`.
# Every committed protocol-3 row matches; the archived protocol-2 names (`oplevel (seed 0)`) are never validated
# again (docs/leaderboard.md, "Names, kinds and built-in rows").
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9:._-]*")


def check_name(name: object) -> str:
    """``name`` if it matches :data:`NAME_PATTERN`, else a one-line :class:`SubmissionError` naming the field,
    the rule and a name that would pass."""
    if isinstance(name, str) and NAME_PATTERN.fullmatch(name):
        return name
    raise SubmissionError(f"`consolidator.name`: {name!r} is not a row name: a row name matches "
                          f"{NAME_PATTERN.pattern} (ASCII lower case, so no letter from another script or width can "
                          f"imitate another row); try {suggest_name(str(name))!r}")


def suggest_name(name: str) -> str:
    """A name that passes :func:`check_name` and is no built-in row's: ``name`` folded to ASCII lower case."""
    folded = unicodedata.normalize("NFKC", name).lower()
    out = re.sub(r"[^a-z0-9:._-]+", "-", folded.encode("ascii", "replace").decode().replace("?", "-")).strip("-:._")
    out = out or "my-consolidator"
    return f"my-{out}" if slug(out).lower() in _taken() else out


def _taken() -> dict[str, str]:
    """The slugs of the built-in rows' names (lower case) -> the name."""
    return {slug(b).lower(): b for b in (*FIXED_RULES, *sorted(REFERENCES))}


def slug(name: str) -> str:
    """A file name for a consolidator name (``oplevel:runs/x/checkpoint-12`` -> ``oplevel-runs-x-checkpoint-12``).
    Not one-to-one (``dedupe!`` -> ``dedupe``): :func:`check_row_free` refuses the second name of a slug."""
    out = "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-.")
    return "-".join(p for p in out.split("-") if p) or "unnamed"


def rule_of(consolidator: dict[str, Any]) -> str:
    """The registered consolidator a submission says it ran (``config.consolidator``, else its name)."""
    return str(consolidator["config"].get("consolidator", consolidator["name"]))


def builtin_rule(consolidator: dict[str, Any]) -> str | None:
    """The package rule the board re-runs for this submission instead of replaying it, or None (a replay).

    ``kind: fixed`` must name one of :data:`FIXED_RULES`; a ``reference`` that names one of the package's
    privileged references (the oracle...) is re-run too, so a row that says it is the oracle is the oracle.
    A built-in row's name is the rule's own, no other row may take a name of its slug, and every name matches
    :data:`NAME_PATTERN`. All of this is checked before any re-score."""
    name, kind, rule = consolidator["name"], consolidator["kind"], rule_of(consolidator)
    if kind == "fixed" and rule not in FIXED_RULES:
        raise SubmissionError(f"`consolidator.kind`: 'fixed' is for the package's fixed rules {list(FIXED_RULES)}, "
                              f"which the board re-runs and compares with the banks; this submission ran {rule!r}: "
                              "submit it as kind 'contender'")
    builtin = rule if (kind == "fixed" or (kind == "reference" and rule in REFERENCES)) else None
    owner = _taken().get(slug(name).lower())  # `Empty` too: a case-insensitive file system would share the file
    if owner is not None and (builtin != owner or name != owner):
        raise SubmissionError(f"`consolidator.name`: {name!r} is the name (file {slug(name)}.json) of the built-in "
                              f"row {owner!r}; only the package's own {owner!r} rule, re-run by the board, is "
                              "listed under it: choose another name")
    if builtin is not None and name != builtin:
        raise SubmissionError(f"`consolidator.name`: a built-in {kind} row is named as its rule, {builtin!r}, "
                              f"not {name!r}")
    check_name(name)
    return builtin


def results_path(results_dir: Path, track: str, name: str) -> Path:
    return Path(results_dir) / track / f"{slug(name)}.json"


def verified_path(results_dir: Path, track: str, name: str) -> Path:
    """Where ``leaderboard verify`` writes the verified run of row ``name``."""
    return Path(results_dir) / track / f"{slug(name)}.verified.json"


def check_verified_free(results_dir: Path, track: str, consolidator: dict[str, Any]) -> Path:
    """Before a verification runs: the path its record will take, or a :class:`SubmissionError`.

    The name is checked as a submission's is (:func:`builtin_rule`). A verified file comes from a fresh run every
    time, so no two digests agree: the *same* verification is the same name running the same consolidator
    (``config.consolidator``), and only it replaces its own file. A verified run also attaches to the re-scored
    row of its name (``board.build_board``), so that row must have run the same consolidator."""
    name, rule = consolidator["name"], rule_of(consolidator)
    builtin_rule(consolidator)
    path = verified_path(results_dir, track, name)
    for held_path in (path, results_path(results_dir, track, name)):
        if not held_path.exists():
            continue
        held = _held(held_path).get("consolidator")
        held_name = held.get("name") if isinstance(held, dict) else None
        held_rule = rule_of({"config": {}, **held}) if isinstance(held, dict) and "name" in held else None
        if held_name != name or held_rule != rule:
            raise SubmissionError(
                f"`consolidator.name`: {name!r} would {'overwrite' if held_path == path else 'be the verified run of'} "
                f"{held_path}, "
                f"the row of {held_name!r} running {held_rule!r}, not {rule!r}: choose another name (--name)")
    return path


def _held(path: Path) -> dict[str, Any]:
    """The results file at ``path`` as data; ``{}`` when there is none (or it is unreadable)."""
    if not path.exists():
        return {}
    try:
        held = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return held if isinstance(held, dict) else {}


def check_row_free(path: Path, name: str, digest: str, builtin: str | None = None) -> None:
    """Refuse to write a row over a results file that holds another submission (its ``submission_sha256``
    differs): two names of one slug, or a second submission under a taken name. Re-validating the same
    submission rewrites its own file, and a built-in row (``builtin``: the rule the board will re-run) replaces
    its own rule's row (``make board``). A maintainer replaces any other row by deleting its file first."""
    if not path.exists():
        return
    held = _held(path)
    if held.get("submission_sha256") == digest or (builtin is not None and held.get("builtin") == builtin):
        return
    who = held.get("consolidator", {}).get("name", "?")
    raise SubmissionError(f"`consolidator.name`: {name!r} would overwrite {path}, the row of {who!r} from another "
                          f"submission (sha256 {str(held.get('submission_sha256', '?'))[:12]}...): choose another "
                          "name (a maintainer replaces a row by deleting its file first)")
