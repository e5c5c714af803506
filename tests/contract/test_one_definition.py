"""The reward contract is declared once (dreamer_gym.contract.definition) and everything follows it: the env
ids and their configs, the leaderboard tracks' checks and the referee's reward (issue 28)."""
from __future__ import annotations

import ast
from pathlib import Path

import gymnasium as gym
import pytest

import dreamer_gym
from dreamer_gym.contract import ids
from dreamer_gym.contract.definition import BUDGET_FIELDS, REWARD_FIELDS, RewardDefinition
from dreamer_gym.errors import ConfigError
from dreamer_gym.leaderboard import Track, load_track
from dreamer_gym.service import CommitRequest

PACKAGE = Path(dreamer_gym.__file__).parent
DEFINITION = PACKAGE / "contract" / "definition.py"
# Where data came from (a pool's or an episode's suite, the pool a record was measured on) is a fact, not a
# parameter: a class that declares only these names records provenance.
PROVENANCE = {"suite", "pool", "pool_hash"}
# Classes that declare a parameter's name for something else: a suite's own default (which the definition's
# None resolves to), the limits a running episode was handed by its config, a lab study's own sample sizes.
NOT_THE_CONTRACT = {("suites/spec.py", "SuiteSpec"), ("envs/tools.py", "Workspace")}


def _modules() -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(PACKAGE)), ast.parse(p.read_text())) for p in sorted(PACKAGE.rglob("*.py"))]


def test_every_reward_field_is_declared_in_one_place():
    """No class but RewardDefinition (and Budgets, beside it) declares a reward-defining field or a budget:
    not the env config, not the env ids, not the leaderboard track."""
    names = {*REWARD_FIELDS, *BUDGET_FIELDS}
    declared: dict[str, list[str]] = {name: [] for name in names}
    for path, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            mine = [s.target.id for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id in names]
            exempt = set(mine) <= PROVENANCE or (path, node.name) in NOT_THE_CONTRACT
            for name in mine:
                if not exempt or name == "size_coef":
                    declared[name].append(f"{path}:{node.name}")
    assert declared["size_coef"] == ["contract/definition.py:RewardDefinition"]
    for name, where in declared.items():
        home = "Budgets" if name in BUDGET_FIELDS else "RewardDefinition"
        assert where == [f"contract/definition.py:{home}"], f"`{name}` is declared in {where}"


def test_the_size_term_is_computed_in_one_function():
    """Only contract.reward.size_term multiplies by size_coef; the referee's joint commit calls it."""
    def names_size_coef(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id == "size_coef" or isinstance(n, ast.Attribute) and n.attr == "size_coef"
                   for n in ast.walk(node))

    products = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and names_size_coef(node):
                products.append(path)
    assert products == ["contract/reward.py"]
    referee = ast.parse((PACKAGE / "service" / "referee.py").read_text())
    joint = next(n for n in ast.walk(referee) if isinstance(n, ast.FunctionDef) and n.name == "commit_joint")
    assert any(isinstance(n, ast.Call) and getattr(n.func, "id", None) == "size_term" for n in ast.walk(joint))


def test_a_track_file_that_lacks_a_field_of_the_definition_fails_naming_it():
    data = load_track("miniwob").data()
    for name in ("size_coef", "invalid_penalty", "max_region_entries"):
        with pytest.raises(ConfigError, match=f"records no `{name}`, a field of the reward definition"):
            Track(**{k: v for k, v in data.items() if k != name})


def test_ids_are_one_definition_each():
    """Every id is a RewardDefinition; an id differs from the one that supersedes it only in the tool contract (and,
    for the windows, the filing rule): -v0 has contract 0, -v1 contract 1, ScienceWorld-v2 and Windows-v1 contract 2."""
    for env_id, spec in ids.ENV_IDS.items():
        assert isinstance(spec, RewardDefinition)
        assert gym.spec(env_id).kwargs["frozen"] == {name: getattr(spec, name) for name in REWARD_FIELDS}
    for old, new in ids.SUPERSEDED.items():
        changes = {"tool_contract": 0 if old.endswith("-v0") and "Windows" not in old else 1}
        if "Windows" in old:  # and a pool of more banks (issue 40)
            changes.update(window_own_families=False, pool=ids.ENV_IDS[old].pool, pool_hash=ids.ENV_IDS[old].pool_hash)
        assert ids.ENV_IDS[old].definition() == RewardDefinition(**{**ids.ENV_IDS[new].definition().__dict__, **changes})


@pytest.fixture
def changed_contract(monkeypatch):
    """Every id redefined from a base definition with another size term (and one episode per commit, so the
    referee below plays little), registered again the way `import dreamer_gym` registers them."""
    changed = ids.define_ids(RewardDefinition(size_coef=0.05, eval_in_family=1, eval_other=0))
    for env_id, spec in changed.items():
        monkeypatch.setitem(ids.ENV_IDS, env_id, spec)
        monkeypatch.setitem(ids.REGISTERED, env_id, ids.env_kwargs(spec))
        monkeypatch.delitem(gym.registry, env_id)
    dreamer_gym.register_envs()
    return changed


@pytest.mark.jvm
def test_a_changed_definition_changes_the_env_the_track_check_and_the_referee_together(changed_contract):
    env_id = "MemoryConsolidation-ScienceWorld-v0"
    env = gym.make(env_id, service="inprocess")
    try:
        config = env.unwrapped.config
        assert (config.size_coef, config.eval_in_family, config.eval_other) == (0.05, 1, 0)
        # the shipped track recorded the old definition: its check now fails, naming the field
        track_id = "MemoryConsolidation-ScienceWorld-v1"  # what the shipped track measures (protocol 3)
        with pytest.raises(ConfigError, match=rf"`size_coef` is 0\.02 but {track_id} measures with 0\.05"):
            load_track("scienceworld")
        # the referee scores with the new size term: two regions emptied at once, each paid +size_coef
        referee = env.unwrapped.service.referee
        families = referee.pool.families[:2]
        results = referee.commit_joint([CommitRequest(0, family, referee.open(0, family, 7).token, ())
                                        for family in families])
        for result in results:
            assert result.info["reward_components"]["size"] == pytest.approx(0.05)  # -0.05 * (0 - t) / t
            assert result.info["reward_definition"]["size_coef"] == 0.05
            assert result.info["env_id"] == env_id  # still the id: its definition is the changed one
    finally:
        env.close()
