"""Slot strategies, one source each (pure Python, no simulator)."""
from __future__ import annotations

from dreamer_gym.agents.slots import SlotContext, resolve_slot


def ctx(name: str, step: str, description: str = "", **kw) -> SlotContext:
    base = dict(used=frozenset(), visible=(), facts=(), last_read=None, reading=None)
    base.update(kw)
    return SlotContext(name=name, step=step, description=description.lower(), **base)


def test_numbered_slot_reads_the_recipe() -> None:
    recipe = "The recipe reads:\nTo make smores, you need to mix chocolate, marshmallow."
    assert resolve_slot(ctx("ingredient 2", "pick up <ingredient 2>", last_read=recipe)) == "marshmallow"
    assert resolve_slot(ctx("ingredient 3", "pick up <ingredient 3>", last_read=recipe)) is None


def test_quoted_substance_and_box_colour_from_the_task() -> None:
    task = "Your task is to use chemistry to create the substance 'salt water'. Move it to the red box."
    assert resolve_slot(ctx("substance", "focus on <substance>", task)) == "salt water"
    assert resolve_slot(ctx("color", "move x to <color> box", task)) == "red"


def test_condition_in_the_task_uses_the_last_measurement() -> None:
    task = ("If the unknown substance B temperature is above 50.0 degrees celsius, place it in the red box. "
            "If the unknown substance B temperature is below 50.0 degrees celsius, place it in the blue box.")
    step = "move <unknown substance> to <color> box"
    assert resolve_slot(ctx("color", step, task, reading=80.0)) == "red"
    assert resolve_slot(ctx("color", step, task, reading=12.0)) == "blue"
    assert resolve_slot(ctx("unknown substance", step, task)) == "unknown substance b"


def test_visible_objects_by_type_word_then_by_category_fact() -> None:
    visible = ("seed jar", "apple seed", "black wire", "green wire", "chair", "orange")
    assert resolve_slot(ctx("seed", "move <seed> to pot", visible=visible)) == "apple seed"
    used = frozenset({"black wire"})
    assert resolve_slot(ctx("wire 2", "connect <wire 2> to x", visible=visible, used=used)) == "green wire"
    facts = ("Examples of a non-living thing: chair, table.", "While trying to find a(n) living thing, 'orange'")
    assert resolve_slot(ctx("non-living thing", "focus on <non-living thing>", visible=visible, facts=facts)) == "chair"
    # "living thing" must not match inside "non-living thing"
    assert resolve_slot(ctx("living thing", "focus on <living thing>", visible=("chair",), facts=facts[:1])) is None
