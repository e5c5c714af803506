"""The typed memory model: content-hashed entries, immutable banks, regions, BM25 retrieval, tokens."""
from __future__ import annotations

import copy
import itertools
import re

import pytest

from dreamer_gym.memory import (
    KINDS,
    BM25Retriever,
    MemoryBank,
    MemoryEntry,
    Provenance,
    Region,
    count_tokens,
    select_by_cluster,
    select_by_family,
)
from dreamer_gym.memory.tokens import tokenize

FILLER_WORDS = ("stove kettle", "anode cathode", "greenhouse seed", "thermometer reading", "freezer ice",
                "paint brush", "bedroom closet", "hallway door", "orange juice", "metal fork", "bathroom toilet",
                "foundry blast furnace")


def filler() -> list[MemoryEntry]:
    """Unrelated entries, so BM25's idf is well defined (BM25Okapi gives terms found in more than half
    of a tiny corpus a non-positive weight)."""
    return [MemoryEntry("insight", f"the {w} matters", f"filler{i}", provenance=(Provenance(f"tf{i}"),))
            for i, w in enumerate(FILLER_WORDS)]


def entry(text: str = "focus on the red box", kind: str = "fact", family: str = "f", traj: str = "t0",
          start: int = 0, end: int = 3, session: int = 0, **kw) -> MemoryEntry:
    return MemoryEntry(kind, text, family, provenance=(Provenance(traj, start, end),), session=session, **kw)


# --- entries ----------------------------------------------------------------------------------------------
class TestMemoryEntry:
    def test_same_content_same_id(self):
        a, b = entry(), entry()
        assert a.id == b.id
        assert a.id.startswith("e") and len(a.id) == 13

    @pytest.mark.parametrize(
        "change",
        [{"text": "focus on the blue box"}, {"kind": "insight"}, {"family": "g"}, {"traj": "t1"}, {"end": 4}],
        ids=["text", "kind", "family", "provenance-trajectory", "provenance-range"],
    )
    def test_content_changes_change_the_id(self, change):
        assert entry(**change).id != entry().id

    def test_bookkeeping_is_not_part_of_the_id(self):
        base = entry()
        assert entry(session=7).id == base.id
        assert entry(supersedes=("e123", "e456")).id == base.id
        assert entry(tags=("verbatim",)).id == base.id

    def test_provenance_order_does_not_matter(self):
        p, q = Provenance("ta", 0, 1), Provenance("tb", 2, 5)
        assert MemoryEntry("fact", "x", provenance=(p, q)).id == MemoryEntry("fact", "x", provenance=(q, p)).id

    def test_id_is_stable_across_runs(self):
        # ids are a fixed function of the content: pinned, so a change of the hash payload (which would
        # silently re-key every stored bank and cache entry) fails loudly
        assert MemoryEntry("fact", "water boils at 100 C", "boil").id == "e463b51c13214"
        prov = (Provenance("tabc", 0, 3),)
        assert MemoryEntry("procedure", "go to kitchen", "boil", provenance=prov).id == "e4bba7e0f2b20"

    @pytest.mark.parametrize("bad", ["lesson", "", "Fact", "procedures"])
    def test_bad_kind_raises_with_message(self, bad):
        with pytest.raises(ValueError, match=r"Expected `kind` to be one of .*insight.*got " + re.escape(repr(bad))):
            MemoryEntry(bad, "text")

    def test_entry_is_frozen(self):
        e = entry()
        with pytest.raises(AttributeError):
            e.text = "something else"  # type: ignore[misc]

    def test_dict_roundtrip(self):
        e = entry(session=3, supersedes=("eb", "ea"), tags=("consolidated",))
        back = MemoryEntry.from_dict(e.to_dict())
        assert back == e and back.id == e.id and back.to_dict() == e.to_dict()
        assert back.supersedes == ("ea", "eb")  # sorted


# --- banks ------------------------------------------------------------------------------------------------
@pytest.fixture
def entries() -> list[MemoryEntry]:
    return [entry(f"step {i}: look around the kitchen", family="fa" if i < 3 else "fb", session=i) for i in range(6)]


class TestMemoryBank:
    def test_order_and_duplicates_do_not_matter(self, entries):
        a = MemoryBank(entries)
        b = MemoryBank(list(reversed(entries)) + entries[:2])
        assert a == b and a.hash == b.hash and len(b) == len(entries)
        assert [e.id for e in a] == sorted(e.id for e in entries)

    def test_is_immutable(self, entries):
        bank = MemoryBank(entries)
        with pytest.raises(AttributeError):
            bank.foo = 1  # type: ignore[attr-defined]
        assert isinstance(bank.entries, tuple)
        with pytest.raises((TypeError, AttributeError)):
            bank.entries.append(entries[0])  # type: ignore[attr-defined]

    def test_replace_returns_new_bank_and_leaves_original(self, entries):
        bank = MemoryBank(entries)
        before_ids, before_hash = [e.id for e in bank], bank.hash
        new = entry("a consolidated lesson", kind="insight", family="fa")
        region = [e.id for e in entries[:3]]
        out = bank.replace(region, [new])
        assert out is not bank and out.hash != bank.hash
        assert [e.id for e in bank] == before_ids and bank.hash == before_hash
        assert set(e.id for e in out) == {e.id for e in entries[3:]} | {new.id}
        assert all(i not in out for i in region) and new.id in out

    def test_replace_with_itself_is_the_same_version(self, entries):
        bank = MemoryBank(entries)
        region = [e.id for e in entries[:3]]
        assert bank.replace(region, entries[:3]) == bank
        assert bank.replace([], []) == bank

    def test_replace_unknown_region_id_raises_keyerror(self, entries):
        bank = MemoryBank(entries)
        with pytest.raises(KeyError, match="enope"):
            bank.replace([entries[0].id, "enope"], [])
        assert len(bank) == len(entries)

    def test_hash_depends_on_entries(self, entries):
        assert MemoryBank(entries).hash != MemoryBank(entries[:-1]).hash
        assert MemoryBank([]).hash.startswith("b")

    def test_get_contains_tokens(self, entries):
        bank = MemoryBank(entries)
        assert bank.get(entries[0].id) == entries[0] and bank.get("enope") is None
        assert entries[1].id in bank and "enope" not in bank
        assert bank.tokens() == sum(count_tokens(e.text) for e in entries)

    def test_dict_roundtrip(self, entries):
        bank = MemoryBank(entries)
        data = bank.to_dict()
        back = MemoryBank.from_dict(copy.deepcopy(data))
        assert back == bank and [e.to_dict() for e in back] == [e.to_dict() for e in bank]
        del data["hash"]
        assert MemoryBank.from_dict(data) == bank  # a dict without a hash is accepted as is

    def test_from_dict_detects_hash_mismatch(self, entries):
        data = MemoryBank(entries).to_dict()
        data["entries"][0]["text"] += " (tampered)"
        with pytest.raises(ValueError, match="bank hash mismatch"):
            MemoryBank.from_dict(data)
        data = MemoryBank(entries).to_dict()
        data["hash"] = "b0000000000000000"
        with pytest.raises(ValueError, match="b0000000000000000"):
            MemoryBank.from_dict(data)


# --- regions ----------------------------------------------------------------------------------------------
class TestRegions:
    def test_region_ids_are_sorted_and_unique(self):
        assert Region("r", ("eb", "ea", "eb")).entry_ids == ("ea", "eb")
        assert Region("r", ("eb", "ea")) == Region("r", ("ea", "eb"))

    def test_select_by_family(self, entries):
        bank = MemoryBank(entries)
        region = select_by_family(bank, "fa")
        assert region.name == "family:fa"
        assert set(region.entry_ids) == {e.id for e in entries if e.family == "fa"}
        assert select_by_family(bank, "nobody").entry_ids == ()

    def test_select_by_family_cap_keeps_most_recent_sessions(self, entries):
        bank = MemoryBank(entries)
        region = select_by_family(bank, "fb", max_entries=2)
        assert set(region.entry_ids) == {entries[4].id, entries[5].id}  # sessions 4 and 5 beat 3

    def test_select_by_family_on_real_pool(self, pool):
        bank = pool.banks[0]
        for family in pool.families:
            region = select_by_family(bank, family, 10)
            assert 0 < len(region.entry_ids) <= 10
            assert all(bank.get(i).family == family for i in region.entry_ids)

    def test_select_by_cluster(self):
        seed = entry("boil water on the stove", kind="procedure")
        near = entry("boil the water with the stove burner", kind="procedure", traj="t1")
        mid = entry("water the plant", traj="t2")
        far = entry("connect the battery anode to the wire", traj="t3")
        bank = MemoryBank([seed, near, mid, far, *filler()])
        region = select_by_cluster(bank, seed.id, 2)
        assert set(region.entry_ids) == {seed.id, near.id} and region.name == f"cluster:{seed.id}"
        assert select_by_cluster(bank, seed.id, 1).entry_ids == (seed.id,)
        assert len(select_by_cluster(bank, seed.id, 100).entry_ids) == len(bank)
        with pytest.raises(KeyError, match="enope"):
            select_by_cluster(bank, "enope", 2)


# --- retrieval --------------------------------------------------------------------------------------------
class TestBM25Retriever:
    def test_identical_texts_tie_break_by_id_regardless_of_input_order(self):
        twins = [entry("focus on the animal", traj=f"t{i}") for i in range(6)]  # same text, different ids
        assert len({e.id for e in twins}) == 6
        other = entry("connect the wire to the battery", traj="tz")
        expected = sorted(e.id for e in twins)
        rest = [other, *filler()]
        for perm in itertools.islice(itertools.permutations(twins), 0, 720, 37):
            for corpus in ([*perm, *rest], [*rest, *perm], [*perm[:3], *rest, *perm[3:]]):
                got = BM25Retriever(corpus).top_k("focus on animal", 10)
                assert [e.id for e in got] == expected
                scored = BM25Retriever(corpus).scores("focus on animal")
                assert [e.id for e, _ in scored][:6] == expected
                assert len({s for _, s in scored[:6]}) == 1  # a real tie, broken by id

    def test_top_k_returns_only_positive_scores(self):
        a = entry("boil water on the stove", traj="ta")
        b = entry("connect the wire to the battery", traj="tb")
        c = entry("plant the seed in the flower pot", traj="tc")
        r = BM25Retriever([a, b, c, *filler()])
        got = r.top_k("boil water", 3)
        assert got[0] == a
        assert all(s > 0 for e, s in r.scores("boil water") if e in got)
        assert {e.id for e, s in r.scores("boil water") if s > 0} == {e.id for e in got}
        assert r.top_k("zebra giraffe", 3) == []
        assert r.top_k("boil water", 0) == [] and r.top_k("boil water", -2) == []

    def test_ranking(self):
        living = entry("find a living thing and focus on it", traj="t1")
        nonliving = entry("find a non-living thing and focus on it", traj="t2")
        r = BM25Retriever([nonliving, living, *filler()])
        assert r.top_k("non-living thing", 1) == [nonliving]
        assert r.top_k("a living thing", 2)[0] == living

    def test_empty_retriever(self):
        assert BM25Retriever([]).top_k("anything", 5) == []
        assert BM25Retriever([]).scores("anything") == []


def test_count_tokens():
    assert count_tokens("") == 0
    assert count_tokens("Hello, world!") == 4
    assert count_tokens("move <seed> to flower pot 1.") == 9
    assert count_tokens("  spaces\tand\nnewlines  ") == 3
    assert tokenize("Focus ON Box") == ["focus", "on", "box"]
    assert count_tokens("a" * 1000) == 1


def test_kinds():
    assert set(KINDS) == {"insight", "procedure", "fact", "pitfall"}
