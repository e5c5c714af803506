"""Fixed rules that read the bank context and write through ``synthesize`` (tool contract 2; issue 40, item 4).

What a cheap rule can do on the new ids, as the fixed rows a learner must beat. Each plays only the env's own
tool calls and reads only what a policy reads (``info["bank_context"]``, the ``synthesize`` results), so a rule
can do nothing a policy cannot:

* ``rule:context``: commit empty where every own task of the region is already covered by older entries of the
  bank (``info["bank_context"][i]["covered"]`` all true), else ``rule:procedures-only``: the audit's best
  predictor of a window's best rule (tasks the bank never saw) turned into a rule;
* ``rule:synthesize-procedures``: per own task, ``synthesize(task, trajectories="success")``, the candidate filed
  as given (skipped where none comes back); nothing else kept;
* ``rule:synthesize-procedures-facts``: the same, plus ``synthesize(task, kind="fact")`` per task;
* ``rule:synthesize-or-keep``: per own task, the synthesized procedure where one comes back, else the task's
  procedures kept verbatim;
* ``rule:context-synthesize``: empty where every own task is covered, else ``rule:synthesize-procedures``.

"Own tasks" are the tasks ``info["bank_context"]`` lists: the families the region's own entries were written for
(a window's sessions A..B; a family region's family). A candidate equal to an entry of the region comes back as
that entry's ``keep`` call, which is played instead of the emit. On an env without tool contract 2 (the ``-v1``
ids) every rule here fails at once, naming the id to use.
"""
from __future__ import annotations

import json
from collections.abc import Generator, Iterable
from typing import Any

import gymnasium as gym

from dreamer_gym.consolidators.base import call
from dreamer_gym.consolidators.op_rule import OP_RULES, OpRuleConsolidator
from dreamer_gym.errors import ConfigError

CONTEXT_RULES: dict[str, str] = {
    "context": "empty where every own task is covered by older entries of the bank, else procedures-only",
    "synthesize-procedures": "per own task, the procedure synthesize aligns from its successful trajectories; "
                             "nothing else kept",
    "synthesize-procedures-facts": "per own task, the synthesized procedure and the synthesized facts; nothing "
                                   "else kept",
    "synthesize-or-keep": "per own task, the synthesized procedure, else the task's procedures kept verbatim",
    "context-synthesize": "empty where every own task is covered, else synthesize-procedures",
}
# a call budget this small left: stop synthesizing, so keep and commit still fit
RESERVED_CALLS = 3

Calls = Generator[str, tuple[dict[str, Any], dict[str, Any]], Any]


def contract2_ids() -> list[str]:
    """The registered ids whose tool contract has ``synthesize`` and the bank context."""
    from dreamer_gym.contract.ids import ENV_IDS

    return [env_id for env_id, spec in ENV_IDS.items() if spec.tool_contract >= 2]


def require_contract2(env: gym.Env, info: dict[str, Any], rule: str) -> None:
    """Raise :class:`ConfigError` naming the id to use unless the env has ``synthesize`` and the bank context."""
    tools = getattr(env.unwrapped, "tools", {})
    if "synthesize" in tools and "bank_context" in info:
        return
    from dreamer_gym.contract.ids import SUPERSEDED

    spec = getattr(env.unwrapped, "spec", None)
    env_id = getattr(spec, "id", None)
    newer = SUPERSEDED.get(env_id) if env_id else None
    use = f"use {newer}" if newer in contract2_ids() else f"use one of {contract2_ids()}"
    contract = getattr(getattr(env.unwrapped, "config", None), "tool_contract", "?")
    raise ConfigError(f"rule:{rule} needs tool contract 2 (the `synthesize` tool and info['bank_context']); this env "
                      f"({env_id or 'unregistered'}) has contract {contract}: {use}")


def all_covered(info: dict[str, Any]) -> bool:
    """Every own task of the region covered by older entries of the bank (False for a region with no task)."""
    context = info["bank_context"]
    return bool(context) and all(task["covered"] for task in context)


def _synthesized(obs: dict[str, Any]) -> dict[str, Any] | None:
    """The filing call of a ``synthesize`` result (its ``emit``, or ``keep`` where the candidate equals a region
    entry), or None where no candidate came back or the result is not one (an error, a cut text)."""
    try:
        result = json.loads(obs["result"])
    except (TypeError, ValueError):
        return None
    filing = (result.get("emit") or result.get("keep")) if isinstance(result, dict) else None
    try:
        return json.loads(filing) if isinstance(filing, str) else None
    except ValueError:
        return None


def synthesize_each(obs: dict[str, Any], info: dict[str, Any], kinds: Iterable[str]) -> Calls:
    """Per own task and kind, one ``synthesize`` call. Returns (as the generator's value) task -> the filing calls
    that came back, for every task it reached (it stops where the call budget runs low), and the last observation
    (its budget)."""
    filings: dict[str, list[dict[str, Any]]] = {}
    for task in (t["task"] for t in info["bank_context"]):
        if int(obs["budget"][0]) <= RESERVED_CALLS + len(tuple(kinds)):
            break
        filings[task] = []
        for kind in kinds:
            obs, info = yield call("synthesize", task=task, trajectories="success", kind=kind)
            filing = _synthesized(obs)
            if filing is not None:
                filings[task].append(filing)
    return filings, obs


def file_calls(filings: Iterable[dict[str, Any]], keep: Iterable[str] = (), max_emits: int | None = None) -> list[str]:
    """One ``keep`` of every id kept (verbatim entries and candidates equal to one), then each ``emit`` (the first
    ``max_emits``: the emit budget left)."""
    filings = list(filings)
    ids = list(dict.fromkeys([*keep, *(i for f in filings if f.get("tool") == "keep" for i in f["ids"])]))
    emits = [call(**f) for f in filings if f.get("tool") == "emit"][:max_emits]
    return ([call("keep", ids=ids)] if ids else []) + emits


class ContextRuleConsolidator:
    """One of :data:`CONTEXT_RULES`, played as the env's own tool calls (``rule:NAME``)."""

    def __init__(self, name: str | None = None, checkpoint: str | None = None) -> None:
        name = name if name is not None else checkpoint  # the registry passes NAME of ``rule:NAME`` as checkpoint
        if name not in CONTEXT_RULES:
            raise ConfigError(f"Expected a context rule, one of {list(CONTEXT_RULES)} (as ``rule:NAME``), got {name!r}")
        self.name = name

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Calls:
        require_contract2(env, info, self.name)
        if self.name in ("context", "context-synthesize") and all_covered(info):
            yield call("commit")
            return
        if self.name == "context":
            yield from OpRuleConsolidator("procedures-only").actions(env, obs, info)
            return
        kinds = ("procedure", "fact") if self.name == "synthesize-procedures-facts" else ("procedure",)
        region, tasks = info["region"], {t["task"] for t in info["bank_context"]}
        filings, last = yield from synthesize_each(obs, info, kinds)
        keep: list[str] = []
        if self.name == "synthesize-or-keep":  # an own task with no candidate (or not reached) keeps its procedures
            keep = [e["id"] for e in region if e["kind"] == "procedure" and e.get("family") in tasks
                    and not filings.get(e["family"])]
        for c in file_calls([f for fs in filings.values() for f in fs], keep, max_emits=int(last["budget"][1])):
            yield c
        yield call("commit")


def rule_consolidator(name: str | None = None, checkpoint: str | None = None) -> Any:
    """``rule:NAME``, the registry's ``rule``: an op rule of :data:`~dreamer_gym.consolidators.op_rule.OP_RULES` or
    one of :data:`CONTEXT_RULES` (here, not in op_rule, so the import points one way)."""
    name = name if name is not None else checkpoint  # the registry passes NAME of ``rule:NAME`` as checkpoint
    if name in CONTEXT_RULES:
        return ContextRuleConsolidator(name)
    if name not in OP_RULES:
        raise ConfigError(f"Expected a rule, one of {[*OP_RULES, *CONTEXT_RULES]} (as ``rule:NAME``), got {name!r}")
    return OpRuleConsolidator(name)
