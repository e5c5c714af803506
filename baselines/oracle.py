"""The oracle consolidator (upper reference) and the decoys that check the reward's validity.

The oracle's procedures are abstractions of the suite's gold paths on TRAIN variations: navigation
prefixes dropped, variation-specific values replaced by ``<slots>``. They were written by hand from
those gold paths (listed here, in the open), and its facts are mined from the gold paths
programmatically. Because the oracle and the memory-following agent come from the same hands, two
decoys check that the reward measures content and not format:

* ``prose-oracle``: the oracle's procedures rephrased as prose; must score like the oracle;
* ``wrong-procedures``: well-formatted procedures with the wrong steps; must score below the raw region.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import gymnasium as gym

from baselines.base import call

ABSTRACT_PROCEDURES: dict[str, str] = {
    "chemistry-mix": "go to kitchen, open cupboard, pick up metal pot, look around, pick up recipe, "
    "read recipe in inventory, look around, pick up <ingredient 1>, move <ingredient 1> to metal pot, "
    "pick up <ingredient 2>, move <ingredient 2> to metal pot, pick up <ingredient 3>, "
    "move <ingredient 3> to metal pot, mix metal pot, focus on <substance>",
    "find-animal": "go to outside, look around, focus on <animal>, pick up <animal>, go to kitchen, "
    "move <animal> in inventory to <color> box",
    "find-living-thing": "go to outside, look around, focus on <living thing>, pick up <living thing>, "
    "go to kitchen, move <living thing> in inventory to <color> box",
    "find-non-living-thing": "go to kitchen, look around, focus on <non-living thing>, "
    "move <non-living thing> to <color> box",
    "grow-plant": "go to <room>, look around, pick up seed jar, go to greenhouse, look around, "
    "move <seed> in seed jar to flower pot 1, focus on <seed> in flower pot 1"
    + ", activate sink, move jug to sink, pour jug into flower pot 1, deactivate sink, wait1, wait1, wait1, wait1" * 4,
    "use-thermometer": "go to kitchen, pick up thermometer, focus on thermometer in inventory, go to <room 1>, "
    "look around, pick up <unknown substance>, focus on <unknown substance> in inventory, go to <room 2>, "
    "look around, use thermometer in inventory on <unknown substance> in inventory, "
    "move <unknown substance> in inventory to <color> box, wait1",
    "power-component": "go to workshop, look around, focus on <color> light bulb, "
    "connect battery anode to <wire 1> terminal 1, connect battery cathode to <wire 2> terminal 1, "
    "connect <wire 1> terminal 2 to cathode in <color> light bulb, "
    "connect <wire 2> terminal 2 to anode in <color> light bulb, wait1, wait1",
}
# ALFWorld: (goal, steps) per task type, written from the walkthroughs of generated TRAIN games. The
# expert's search (the "go to" steps before a take) becomes one "<object location>" step; where things
# usually are comes from the facts below, mined from the same walkthroughs.
_TAKE = "go to <object location>, take <object> from <object location>"
_PUT = "go to <receptacle>, move <object> to <receptacle>"
ALFWORLD_PROCEDURES: dict[str, tuple[str, str]] = {
    "pick_and_place_simple": ("put a <object> in <receptacle>", f"{_TAKE}, {_PUT}"),
    "look_at_obj_in_light": ("look at <object> under the <lamp>", f"{_TAKE}, go to <lamp location>, use <lamp>"),
    "pick_clean_then_place_in_recep": (
        "put a clean <object> in <receptacle>", f"{_TAKE}, go to sinkbasin 1, clean <object> with sinkbasin 1, {_PUT}"),
    "pick_heat_then_place_in_recep": (
        "put a hot <object> in <receptacle>", f"{_TAKE}, go to microwave 1, heat <object> with microwave 1, {_PUT}"),
    "pick_cool_then_place_in_recep": (
        "put a cool <object> in <receptacle>", f"{_TAKE}, go to fridge 1, cool <object> with fridge 1, {_PUT}"),
    "pick_two_obj_and_place": ("put two <object> in <receptacle>", f"{_TAKE}, {_PUT}, {_TAKE}, {_PUT}"),
}
# MiniWoB++: (goal template, steps) per task, in the suite's action language; a goal's <slots> are what a
# task's goal says in their place ("check each of <items>" repeats for every item of a list).
MINIWOB_PROCEDURES: dict[str, tuple[str, str]] = {
    "click-button": ('Click on the "<name>" button', 'click "<name>"'),
    "click-checkboxes": ("Select <items> and click Submit", 'check each of <items>, click "Submit"'),
    "click-dialog": ('Close the dialog box by clicking the "x"', "click button 1"),
    "click-link": ('Click on the link "<text>"', 'click "<text>"'),
    "click-option": ("Select <option> and click Submit", 'check "<option>", click "Submit"'),
    "click-tab": ("Click on <tab>", 'click "<tab>"'),
    "choose-list": ("Select <item> from the list and click Submit", 'select "<item>", click "Submit"'),
    "enter-password": ('Enter the password "<password>" into both text fields and press submit',
                       'type "<password>" into "Password", type "<password>" into "Verify password", click "Submit"'),
    "enter-text": ('Enter "<text>" into the text field and press Submit', 'type "<text>" into textbox 1, click "Submit"'),
    "focus-text": ("Focus into the textbox", "focus textbox 1"),
    "login-user": ('Enter the username "<username>" and the password "<password>" into the text fields and press login',
                   'type "<username>" into "Username", type "<password>" into "Password", click "Login"'),
}
TEMPLATED = {**ALFWORLD_PROCEDURES, **MINIWOB_PROCEDURES}  # procedures that carry their own goal
CATEGORY = {"find-animal": "animal", "find-living-thing": "living thing", "find-non-living-thing": "non-living thing"}


def _family_task(env: gym.Env, family: str) -> str:
    """The task's goal as the suite words it on TRAIN variations ("find a(n) living thing")."""
    texts = env.unwrapped.pool.trajectories.values()
    for traj in sorted(texts, key=lambda t: t.id):
        if traj.family == family:
            return traj.task_description.split(".")[0].replace("Your task is to ", "").strip()
    return family.replace("-", " ")


def category_facts(family: str, gold_paths: dict[int, tuple[str, ...]]) -> list[str]:
    """Facts mined from train gold paths: which objects belong to the task's category."""
    if family not in CATEGORY:
        return []
    seen: list[str] = []
    for path in gold_paths.values():
        for action in path:
            m = re.match(r"focus on (.+)$", action)
            if m:
                name = re.sub(r"^(?:egg |baby |adult |young )+| egg$| in .*$", "", m.group(1)).strip()
                if name and name not in seen:
                    seen.append(name)
    return [f"Examples of a {CATEGORY[family]}: " + ", ".join(seen) + "."] if seen else []


def _kind(name: str) -> str:
    return re.sub(r" \d+$", "", name)


def _or_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def location_facts(family: str, train_gold: dict[str, dict[int, tuple[str, ...]]], max_facts: int = 3,
                   per_fact: int = 6) -> list[str]:
    """ALFWorld: where the objects of ``family``'s TRAIN walkthroughs were taken from, by type, counted over
    every family's walkthroughs ("A mug is usually found in the cabinet, countertop or coffeemachine.")."""
    from collections import Counter

    places: dict[str, Counter[str]] = {}
    for paths in train_gold.values():
        for path in paths.values():
            for action in path:
                m = re.match(r"take (.+?) from (.+)$", action)
                if m:
                    places.setdefault(_kind(m.group(1)), Counter())[_kind(m.group(2))] += 1
    mine = Counter(_kind(m.group(1)) for path in train_gold.get(family, {}).values() for a in path
                   if (m := re.match(r"take (.+?) from (.+)$", a)))
    sentences = [f"A {obj} is usually found in the {_or_list([p for p, _ in places[obj].most_common(3)])}."
                 for obj, _ in mine.most_common(max_facts * per_fact)]
    return [" ".join(sentences[i: i + per_fact]) for i in range(0, len(sentences), per_fact)]


def _anchor(info: dict[str, Any]) -> list[str]:
    procs = [e["id"] for e in info["region"] if e["kind"] == "procedure"]
    return (procs or [e["id"] for e in info["region"]])[:8]


class OracleConsolidator:
    name = "oracle"

    def texts(self, env: gym.Env, family: str) -> list[tuple[str, str]]:
        pool = env.unwrapped.pool
        if family in TEMPLATED:
            goal, steps = TEMPLATED[family]
            facts = location_facts(family, pool.train_gold) if family in ALFWORLD_PROCEDURES else []
            return [("procedure", f"To {goal}: {steps}."), *(("fact", f) for f in facts)]
        out = []
        if family in ABSTRACT_PROCEDURES:
            out.append(("procedure", f"To {_family_task(env, family)}: {ABSTRACT_PROCEDURES[family]}."))
        out += [("fact", f) for f in category_facts(family, pool.train_gold.get(family, {}))]
        return out

    def actions(self, env: gym.Env, obs: dict[str, Any], info: dict[str, Any]) -> Iterator[str]:
        if not info["region"]:
            yield call("commit")
            return
        for kind, text in self.texts(env, info["family"]):
            yield call("emit", kind=kind, text=text, provenance=_anchor(info))
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
    name = "prose-oracle"

    def texts(self, env: gym.Env, family: str) -> list[tuple[str, str]]:
        out = []
        for kind, text in super().texts(env, family):
            if kind == "procedure":
                head, _, body = text.partition(": ")
                text = f"{head}. " + as_prose(body.rstrip("."))
            out.append((kind, text))
        return out


class WrongProcedureDecoy(OracleConsolidator):
    """Well-formatted, on-topic procedures whose steps belong to another family."""

    name = "wrong-procedures"

    def texts(self, env: gym.Env, family: str) -> list[tuple[str, str]]:
        for table in (ALFWORLD_PROCEDURES, MINIWOB_PROCEDURES):
            if family in table:
                names = sorted(table)
                other = names[(names.index(family) + 1) % len(names)]
                return [("procedure", f"To {table[family][0]}: {table[other][1]}.")]
        families = sorted(ABSTRACT_PROCEDURES)
        other = families[(families.index(family) + 1) % len(families)] if family in families else families[0]
        return [("procedure", f"To {_family_task(env, family)}: {ABSTRACT_PROCEDURES[other]}.")]
