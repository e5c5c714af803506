"""Wrappers: one prompt string for LLM policies; fixed-size spaces for SB3-style libraries."""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from dreamer_gym.envs.bank_context import CONTEXT_FEATURES, TaskContext, context_features
from dreamer_gym.envs.group_evidence import entry_evidence
from dreamer_gym.envs.spaces import text_space
from dreamer_gym.envs.tools import BANK_CONTEXT_CONTRACT, tools_for
from dreamer_gym.errors import ConfigError
from dreamer_gym.memory import KINDS
from dreamer_gym.memory.tokens import count_tokens, tokenize
from dreamer_gym.prompts import load_prompt

PROMPT_CHARS = 65_536


def tool_list(contract: int = 1) -> str:
    """The tool schema lines the prompts show, one per tool of ``contract`` (the env's ``tool_contract``)."""
    return "\n".join(f"- {spec}" for spec in tools_for(contract).values())


def system_prompt(contract: int = 1) -> str:
    """The consolidator's instructions with the tool list (``dreamer_gym/prompts/consolidator_system.md``)."""
    return load_prompt("consolidator_system").format(tools=tool_list(contract))


def render_state(observation: dict[str, Any]) -> str:
    """The changing part of a prompt: the region, the last tool result and the budget."""
    calls, emits, emitted, size = (int(x) for x in observation["budget"])
    return (
        f"{observation['region']}\n\nLast result: {observation['result']}\n"
        f"Budget: {calls} tool calls left, {emits} new entries left, {emitted} in the new region, "
        f"{size} entries in the region."
    )


class PromptObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Render the dict observation as one prompt string (tool schema, region, last result, budget)."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        self.observation_space = text_space(PROMPT_CHARS)

    def observation(self, observation: dict[str, Any]) -> str:
        contract = getattr(getattr(self.env.unwrapped, "config", None), "tool_contract", 1)
        return f"{system_prompt(contract)}\n\n{render_state(observation)}\n"[:PROMPT_CHARS]


# One column per feature, from the entry's kind, session, text length, provenance and the acquisition
# writer's tags, then the evidence of its group (entry_classes) read off the goals the writer's sentences
# name (group_evidence.py: where a merge would lose a task); docs/env.md has the table. Columns are only
# ever appended, and a checkpoint records the list it was trained on (check_features).
GROUP_FEATURES: tuple[str, ...] = ("group_goals", "goal_share", "group_support", "region_families")  # issue 31
ENTRY_FEATURES: tuple[str, ...] = (
    *(f"is_{kind}" for kind in KINDS), "session", "tokens_div_100", "provenance_steps_div_10",
    "provenance_links", "verbatim", "variation_specific", "score_jump", "score_drop", "failure", "location",
    "near_duplicates", *GROUP_FEATURES,
)
_TAG_FEATURES = {"verbatim": "verbatim", "score_jump": "score-jump", "score_drop": "score-drop", "failure": "failure",
                 "location": "location"}
RULE_TAGS = frozenset(_TAG_FEATURES.values())  # the tags the rules that write entries give them


ENTRY_FEATURES_V2: tuple[str, ...] = (*ENTRY_FEATURES, *CONTEXT_FEATURES)


def feature_names(contract: int) -> tuple[str, ...]:
    """The op-level observation's columns on an env of tool contract ``contract``: :data:`ENTRY_FEATURES` before
    contract 2 (exactly as trained and recorded so far), then the bank context's :data:`CONTEXT_FEATURES`."""
    return ENTRY_FEATURES_V2 if contract >= BANK_CONTEXT_CONTRACT else ENTRY_FEATURES


def check_features(trained_on: Sequence[str] | int, source: str,
                   expected: Sequence[str] = ENTRY_FEATURES) -> None:
    """Raise unless a policy was trained on the features ``expected`` (the env's :func:`feature_names`;
    default: contracts 0-1's :data:`ENTRY_FEATURES`): ``trained_on`` is the list its checkpoint records, or only
    its observation width where the checkpoint records no list (saved before issue 31 added
    :data:`GROUP_FEATURES`, or an SB3 model)."""
    expected = tuple(expected)
    if isinstance(trained_on, int):
        width, same = trained_on, trained_on == len(expected)
    else:
        width, same = len(trained_on), tuple(trained_on) == expected
    if same:
        return
    versions = {len(ENTRY_FEATURES): "a tool-contract-0/1 env (no bank context)",
                len(ENTRY_FEATURES_V2): "a tool-contract-2 env (the bank context's columns)"}
    if width in versions and len(expected) in versions:  # one env version's policy on the other's env
        raise ConfigError(f"{source} was trained on {width} entry features, on {versions[width]}, but this env is "
                          f"{versions[len(expected)]} whose observation has {len(expected)}: the shapes do not match. "
                          "Retrain it on this env id (`dreamer-gym train --algo oplevel` with this env_id, or "
                          "`--algo sb3`), or evaluate it on an id of the tool contract it was trained on")
    raise ConfigError(f"{source} was trained on {width} entry features, but this version's observation has "
                      f"{len(expected)} (issue 31 appended {', '.join(GROUP_FEATURES)}; issue 40 the bank context's "
                      f"{', '.join(CONTEXT_FEATURES)} on tool-contract-2 ids): the shapes do not match. Retrain it on "
                      "this version (`dreamer-gym train --algo oplevel`, or `--algo sb3`)")


def task_contexts(context: Sequence[dict[str, Any]]) -> tuple[TaskContext, ...]:
    """``info["bank_context"]``'s dicts back as :class:`~dreamer_gym.envs.bank_context.TaskContext` objects."""
    return tuple(TaskContext(**{**c, "retrieved_sessions": tuple(c["retrieved_sessions"]),
                                "older_outside": dict(c["older_outside"])}) for c in context)


def entry_classes(region: list[dict[str, Any]]) -> np.ndarray:
    """Per entry, the index of its class: its kind and its rule tags (verbatim, score-jump, location, ...),
    numbered in order of first appearance. A ``tie: class`` policy plays one op per class, GRPO's ``ops``
    grammar lists one group per class, and the group features are computed over it (so it lives here,
    below :mod:`dreamer_gym.envs.ops`, which re-exports it)."""
    keys: dict[tuple[str, tuple[str, ...]], int] = {}
    out = []
    for entry in region:
        tags = tuple(sorted(t for t in entry.get("tags", ()) if t in RULE_TAGS))
        out.append(keys.setdefault((entry["kind"], tags), len(keys)))
    return np.array(out, dtype=np.int64)


def entry_features(region: list[dict[str, Any]], max_entries: int,
                   context: Sequence[dict[str, Any]] | None = None) -> np.ndarray:
    """``(max_entries, len(ENTRY_FEATURES))`` float32 features of ``info["region"]`` items, zero-padded; with
    ``context`` (a contract-2 env's ``info["bank_context"]``) the bank context's columns appended
    (``len(ENTRY_FEATURES_V2)``)."""
    if context is not None:
        return np.concatenate([entry_features(region, max_entries),
                               context_features(region, task_contexts(context), max_entries)], axis=1)
    col = {name: i for i, name in enumerate(ENTRY_FEATURES)}
    feats = np.zeros((max_entries, len(ENTRY_FEATURES)), dtype=np.float32)
    token_sets = [set(tokenize(e["text"])) for e in region]
    for i, entry in enumerate(region[:max_entries]):
        tags = set(entry.get("tags", ()))
        feats[i, col[f"is_{entry['kind']}"]] = 1.0
        feats[i, col["session"]] = entry.get("session", 0)
        feats[i, col["tokens_div_100"]] = count_tokens(entry["text"]) / 100
        feats[i, col["provenance_steps_div_10"]] = sum(p["end"] - p["start"] + 1 for p in entry["provenance"]) / 10
        feats[i, col["provenance_links"]] = len(entry["provenance"])
        feats[i, col["variation_specific"]] = float(any(t.startswith("variation:") for t in tags))
        for name, tag in _TAG_FEATURES.items():
            feats[i, col[name]] = float(tag in tags)
    for i, count in enumerate(near_duplicate_counts(token_sets)[:max_entries]):
        feats[i, col["near_duplicates"]] = count
    shown = region[:max_entries]
    for i, evidence in enumerate(entry_evidence(shown, entry_classes(shown).tolist())):
        feats[i, col["group_goals"]] = evidence.group_goals
        feats[i, col["goal_share"]] = evidence.goal_share
        feats[i, col["group_support"]] = evidence.group_support
        feats[i, col["region_families"]] = evidence.region_families
    return np.clip(feats, 0.0, 1_000.0)


def near_duplicate_counts(token_sets: list[set[str]], threshold: float = 0.8) -> list[int]:
    """Per set, how many others it overlaps by Jaccard >= ``threshold``: each pair once, by intersection
    size alone (|A u B| = |A| + |B| - |A n B|), skipping pairs whose sizes alone rule it out."""
    sizes = [len(t) for t in token_sets]
    counts = [0] * len(token_sets)
    for i in range(len(token_sets)):
        for j in range(i + 1, len(token_sets)):
            small, large = sorted((sizes[i], sizes[j]))
            if small < threshold * large:
                continue
            inter = len(token_sets[i] & token_sets[j])
            if inter >= threshold * max(sizes[i] + sizes[j] - inter, 1):
                counts[i] += 1
                counts[j] += 1
    return counts


class EntryOpsWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Fixed-size spaces for standard RL libraries (SB3, CleanRL, RLlib).

    Observation: a ``Box(max_entries, len(feature_names(contract)))`` of entry features over the padded region
    (on a tool-contract-2 env the bank context's columns appended), plus a mask row count in ``info["n_entries"]``. Action: ``MultiDiscrete([2] * max_entries)``, one
    operation per entry (0 = drop, 1 = keep; padding is ignored). One step = keep the chosen entries
    and commit, so an episode is one step long and its reward is the env's commit reward.
    """

    def __init__(self, env: gym.Env, max_entries: int = 50) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, max_entries=max_entries)
        gym.Wrapper.__init__(self, env)
        self.max_entries = max_entries
        self.features = feature_names(env.unwrapped.config.tool_contract)
        self.observation_space = spaces.Box(0.0, 1_000.0, shape=(max_entries, len(self.features)), dtype=np.float32)
        self.action_space = spaces.MultiDiscrete([2] * max_entries)
        self._ids: list[str] = []

    def reset(self, **kwargs: Any):
        _, info = self.env.reset(**kwargs)
        region = info["region"][: self.max_entries]
        self._ids = [e["id"] for e in region]
        info["n_entries"] = len(self._ids)
        return entry_features(region, self.max_entries, info.get("bank_context")), info

    def step(self, action: Any):
        keep = [i for i, op in zip(self._ids, np.asarray(action).tolist()) if op == 1]
        reward = 0.0
        if keep:
            _, r, *_ = self.env.step(json.dumps({"tool": "keep", "ids": keep}))
            reward += r
        _, r, terminated, truncated, info = self.env.step(json.dumps({"tool": "commit"}))
        info["n_entries"] = len(self._ids)
        obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        return obs, reward + r, terminated, truncated, info
