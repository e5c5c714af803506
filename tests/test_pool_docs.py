"""docs/banks.md's table of issue 40's pools is what the shipped pools hold: hash, bank count and region count are
read off the pools, not copied by hand."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from dreamer_gym.pool import load_pool

PAGE = Path(__file__).parent.parent / "docs" / "banks.md"
ROW = re.compile(r"^\| `(?P<pool>[a-z0-9-]+)` \| `(?P<hash>p[0-9a-f]{16})` \| .*? \| (?P<banks>\d+)(?=[ (]).*? \| (?P<regions>\d+)( windows)? \| ")


def rows() -> list[dict[str, str]]:
    section = PAGE.read_text().split("### Issue 40's pools", 1)[1].split("\n## ", 1)[0]
    return [m.groupdict() for line in section.splitlines() if (m := ROW.match(line))]


def test_the_table_lists_the_five_pools() -> None:
    assert [r["pool"] for r in rows()] == ["scienceworld-windows-v1", "scienceworld-windows-r3-v1",
                                          "scienceworld-windows-heldout-v1", "scienceworld-windows-heldout-r3-v1",
                                          "scienceworld-train-v1"]


@pytest.mark.parametrize("row", rows(), ids=lambda r: r["pool"])
def test_each_row_is_what_the_pool_holds(row: dict[str, str]) -> None:
    pool = load_pool(row["pool"])
    assert pool.hash == row["hash"]
    assert len(pool.banks) == int(row["banks"])
    assert sum(len(pool.region_keys(i)) for i in range(len(pool.banks))) == int(row["regions"])
