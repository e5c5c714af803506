"""What the ``ops`` grammar's listing adds on a tool-contract-2 env (issue 40): the bank context, per group (its
entries' tasks, covered or new) and per task (:func:`context_lines`), and the ``synthesize`` command's line.

Read off ``info["bank_context"]`` (:func:`dreamer_gym.envs.bank_context.context_dicts`): the audit's best predictor
of a window's best rule was whether the bank already held its tasks, which a listing of the region alone cannot
show. :mod:`dreamer_gym.methods.grpo.commands` puts these lines in the prompt; older envs' prompts never call them.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SYNTHESIZE_LINE = ("  synthesize G - replace group G by one new procedure per task, aligned from the region's "
                   "recorded runs of that task\n")  # the ops grammar on a tool-contract-2 env


def group_tasks(members: list[dict[str, Any]], context: Sequence[dict[str, Any]]) -> str:
    """`` | tasks: boil 3 covered, melt 1 new``: a group's entries per task, each task covered by older entries
    of the bank or new (``older`` where the task is only retrieved here, not one of the region's own)."""
    covered = {c["task"]: c["covered"] for c in context}
    counts: dict[str, int] = {}
    for e in members:
        counts[e.get("family", "")] = counts.get(e.get("family", ""), 0) + 1
    parts = [f"{task} {n} " + ("older" if task not in covered else "covered" if covered[task] else "new")
             for task, n in counts.items()]
    return " | tasks: " + ", ".join(parts)


def context_lines(context: Sequence[dict[str, Any]]) -> str:
    """The bank context under the groups, one line per task of the region (``info["bank_context"]``): e.g.
    ``task boil: covered, 3 older outside (procedure 1, fact 2, insight 0, pitfall 0), age 2, 2 retrieved``."""
    lines = ["Bank context (the bank's older entries of each task, outside this region):"]
    for c in context:
        retrieved = f", {c['retrieved']} retrieved" if c["retrieved"] else ""
        if not c["covered"]:
            lines.append(f"task {c['task']}: new (no older entry){retrieved}")
            continue
        outside = c["older_outside"]
        kinds = ", ".join(f"{kind} {outside.get(kind, 0)}" for kind in ("procedure", "fact", "insight", "pitfall"))
        lines.append(f"task {c['task']}: covered, {sum(outside.values())} older outside ({kinds}), age {c['age']}"
                     f"{retrieved}")
    return "\n".join(lines)
