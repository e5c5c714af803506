"""Red team: a window region's new entry filed where the window's evaluation never looks (issue 38, item 5).

A window region holds the entries its sessions wrote and the older entries they retrieved. Its evaluation draws
its in-region episodes from the families the window's own sessions played; an emit that cites an older retrieved
entry is filed under *that* entry's family, which may be none of them. ``MemoryConsolidation-ScienceWorldWindows-v0``
accepts it (and must keep doing so: its rewards are frozen); a config with ``window_own_families=True`` (the
windows id's next version, issue 40) refuses it in the env's tools (an error observation) and in the referee.
Real envs and process services on the shipped windows pool."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import dreamer_gym  # noqa: F401 - registers the ids
from dreamer_gym.errors import RewardServiceError
from dreamer_gym.memory import bank_at, region_task_mix
from dreamer_gym.service import CommitRequest

from helpers import call, make_env

ENV_ID = "MemoryConsolidation-ScienceWorldWindows-v0"
# a window whose sessions played chemistry-mix, find-non-living-thing and use-thermometer and retrieved older
# power-component entries (113 of the pool's 296 windows retrieve a family their sessions did not play)
BANK, KEY = 0, "window:4-7"
EXPLOIT = "Connect the battery to the wire, then the wire to the bulb."


def _open(own: bool) -> tuple[gym.Env, dict[str, Any], set[str]]:
    """An env of the windows id (``window_own_families=own``) reset on the window; its region info and the
    families the window's own sessions played."""
    env = make_env(ENV_ID, eval_in_family=2, eval_other=1, window_own_families=own)
    _, info = env.reset(seed=0, options={"bank": BANK, "region": KEY})
    pool = env.unwrapped.pool
    v0 = bank_at(pool.banks[BANK], KEY)
    region = pool.region_scheme.select(v0, KEY, pool.trajectories, env.unwrapped.config.max_region_entries)
    return env, info, set(region_task_mix(v0, region))


def _foreign(info: dict[str, Any], own: set[str]) -> dict[str, Any]:
    """An older retrieved entry of a family the window's sessions did not play."""
    return next(e for e in info["region"] if e["family"] not in own)


def test_the_registered_windows_id_keeps_the_v0_rule_and_v1_freezes_the_new_one() -> None:
    env = gym.make(ENV_ID)
    try:
        assert env.unwrapped.config.window_own_families is False
        assert gym.spec(ENV_ID).kwargs["frozen"]["window_own_families"] is False  # frozen since issue 40
    finally:
        env.close()
    assert gym.spec("MemoryConsolidation-ScienceWorldWindows-v1").kwargs["frozen"]["window_own_families"] is True


def test_an_entry_filed_under_a_retrieved_entrys_family_is_refused_with_the_field_on() -> None:
    old, old_info, own = _open(False)
    new, info, _ = _open(True)
    try:
        foreign = _foreign(info, own)
        emit = call("emit", kind="procedure", text=EXPLOIT, provenance=[foreign["id"]])
        obs, *_, accepted = old.step(emit)  # -v0: filed under the retrieved entry's family
        [entry] = old.unwrapped._ws.emitted
        assert accepted["invalid_calls"] == 0 and entry.family == foreign["family"] and entry.family not in own
        obs, reward, terminated, _, refused = new.step(emit)  # the field on: an error observation, not a crash
        assert not terminated and reward == -new.unwrapped.config.invalid_penalty and refused["invalid_calls"] == 1
        assert obs["result"].startswith(f"ERROR: this entry would be filed under {foreign['family']!r}")
        assert f"window {KEY!r}'s own sessions did not play; a new entry is filed under one of {sorted(own)}" in \
            refused["last_error"]
        assert new.unwrapped._ws.emitted == []
        mine = next(e for e in info["region"] if e["family"] in own)  # citing the window's own evidence is fine
        _, _, _, _, after = new.step(call("emit", kind="procedure", text=EXPLOIT, provenance=[mine["id"]]))
        assert after["invalid_calls"] == 1 and new.unwrapped._ws.emitted[0].family == mine["family"]
        # past the tools: the -v0 env's entry sent to the field's referee with the episode's live token
        service, token = new.unwrapped.service, new.unwrapped._ticket.token
        with pytest.raises(RewardServiceError, match=rf"new entry {entry.id} is of family '{foreign['family']}', "
                                                     rf"not one of the families region '{KEY}' its own sessions "
                                                     rf"played: \[.*'{sorted(own)[0]}'"):
            service.commit(CommitRequest(BANK, KEY, token, (entry,)))
    finally:
        old.close()
        new.close()


@pytest.mark.jvm
def test_on_v0_the_exploit_is_scored_and_its_entry_sits_outside_the_evaluated_families() -> None:
    env, info, own = _open(False)
    try:
        foreign = _foreign(info, own)
        keep = [e["id"] for e in info["region"] if e["family"] in own]
        env.step(call("keep", ids=keep))
        env.step(call("emit", kind="procedure", text=EXPLOIT, provenance=[foreign["id"]]))
        _, reward, terminated, _, after = env.step(call("commit"))
        assert terminated and isinstance(reward, float) and after["invalid_calls"] == 0
        evaluated = {e["family"] for e in after["episodes"] if e["in_family"]}
        assert evaluated <= own and foreign["family"] not in evaluated
    finally:
        env.close()
