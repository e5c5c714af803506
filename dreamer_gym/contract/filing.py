"""Under which families a new entry of a window region may be filed: one rule for the env's tools, the referee
and the board.

A window region (``window:A-B``) holds the entries the agent wrote over sessions A..B and the older entries it
retrieved then. Its evaluation draws its in-region episodes from the families the window's *own* sessions played
(:func:`~dreamer_gym.memory.region_task_mix`), not from the families of the retrieved entries. Filing a new
entry under a retrieved entry's family therefore puts it where the region's evaluation never looks.
``MemoryConsolidation-ScienceWorldWindows-v0`` allows it (any family of the region's entries); a config with
``window_own_families=True`` (the windows id's next version, issue 40) allows only the window's own families.
Family regions are unaffected: a new entry is of the region's family.
"""
from __future__ import annotations

from dreamer_gym.memory import MemoryBank, Region, parse_window, region_task_mix


def filing_families(bank: MemoryBank, key: str, region: Region, own_sessions_only: bool) -> frozenset[str]:
    """The families a new entry of region ``key`` (``region``, of bank v0 ``bank``) may be filed under: the
    family itself on a family region; on a window region, the families the window's own sessions played
    (``own_sessions_only``), else every family among the region's entries (the ``-v0`` rule)."""
    if parse_window(key) is None:
        return frozenset({key})
    if own_sessions_only:
        return frozenset(region_task_mix(bank, region))
    return frozenset(e.family for i in region.entry_ids if (e := bank.get(i)) is not None)


__all__ = ["filing_families"]
