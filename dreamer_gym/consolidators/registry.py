"""The consolidator registry: name -> factory. One line per built-in consolidator, imported on first use
(so looking up ``keep-all`` never imports an LLM stack); other packages add theirs with
:func:`register_consolidator` or an entry point in the ``dreamer_gym.consolidators`` group::

    # pyproject.toml of your package
    [project.entry-points."dreamer_gym.consolidators"]
    mine = "my_pkg.policy:MyConsolidator"

An entry point names a class or any factory: ``make_consolidator(name, **kwargs)`` calls it with
``kwargs`` and checks that what comes back has ``actions(env, obs, info)``. The CLI then runs it by name:
``dreamer-gym consolidate --consolidator mine``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dreamer_gym.consolidators.base import Consolidator
from dreamer_gym.errors import ConfigError
from dreamer_gym.registry import Registry, callable_as

ENTRY_POINT_GROUP = "dreamer_gym.consolidators"

# name -> "module:factory" of the built-in consolidators (the one line a new built-in adds)
BUILTIN: dict[str, str] = {
    "keep-all": "dreamer_gym.consolidators.fixed:KeepAllConsolidator",
    "empty": "dreamer_gym.consolidators.fixed:EmptyConsolidator",
    "dedupe": "dreamer_gym.consolidators.fixed:DedupeConsolidator",
    "blind": "dreamer_gym.consolidators.fixed:BlindConsolidator",
    "oracle": "dreamer_gym.consolidators.oracle:OracleConsolidator",
    "prose-oracle": "dreamer_gym.consolidators.oracle:ProseOracleDecoy",
    "wrong-procedures": "dreamer_gym.consolidators.oracle:WrongProcedureDecoy",
    "random": "dreamer_gym.consolidators.random_policy:RandomConsolidator",
    "prompted": "dreamer_gym.consolidators.prompted:PromptedConsolidator",
    "consensus": "dreamer_gym.consolidators.fixed:ConsensusConsolidator",  # op rules: merge procedures, drop the rest
    "rule": "dreamer_gym.consolidators.context_rules:rule_consolidator",  # rule:NAME: an op rule or a context rule
    "selector": "dreamer_gym.consolidators.rule_selector:RuleSelectorConsolidator",  # selector:PATH, a learned rule choice
    "oplevel": "dreamer_gym.methods.oplevel.consolidator:OpLevelConsolidator",  # oplevel:CHECKPOINT (none: untrained)
    "sb3": "dreamer_gym.methods.oplevel.consolidator:SB3OpLevelConsolidator",  # sb3:MODEL.zip (MaskablePPO, op level)
    "grpo": "dreamer_gym.methods.grpo.consolidator:GRPOConsolidator",  # grpo:CHECKPOINT (no checkpoint: untrained)
    "grpo-drop": "dreamer_gym.methods.grpo.consolidator:GRPODropConsolidator",  # untrained, `drop` grammar
    "grpo-ops": "dreamer_gym.methods.grpo.consolidator:GRPOOpsConsolidator",  # untrained, `ops` grammar
    "constant": "dreamer_gym.consolidators.adversarial:ConstantConsolidator",  # red team (privileged)
    "bait": "dreamer_gym.consolidators.adversarial:BaitConsolidator",  # red team (privileged)
    # red team that reads nothing privileged (issue 11; consolidators/red_team.py)
    "constant-train": "dreamer_gym.consolidators.red_team:ConstantTrainConsolidator",
    "constant-transfer": "dreamer_gym.consolidators.red_team:ConstantTransferConsolidator",
    "stuffing": "dreamer_gym.consolidators.red_team:StuffingConsolidator",
    "junk": "dreamer_gym.consolidators.red_team:JunkConsolidator",
    "giant": "dreamer_gym.consolidators.red_team:GiantConsolidator",
    "duplicate": "dreamer_gym.consolidators.red_team:DuplicateConsolidator",
    "injection": "dreamer_gym.consolidators.red_team:InjectionConsolidator",
    "copy-trajectory": "dreamer_gym.consolidators.red_team:CopyTrajectoryConsolidator",
}

_HOW_TO_REGISTER = (
    "register one with dreamer_gym.consolidators.register_consolidator(name, factory), or install an entry "
    f"point in the {ENTRY_POINT_GROUP!r} group (mine = \"my_pkg.policy:MyConsolidator\")"
)


CONSOLIDATORS: Registry[Callable[..., Consolidator]] = Registry(
    "consolidator", ENTRY_POINT_GROUP, BUILTIN, option="--consolidator", check=callable_as("a class or factory"),
    how=_HOW_TO_REGISTER)


def register_consolidator(name: str, factory: str | Callable[..., Consolidator], *, replace: bool = False) -> None:
    """Make ``factory`` (a class, a callable or a ``"module:attr"`` string) known as ``name``."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"Expected a consolidator name such as 'my-policy', got {name!r}")
    if not (callable(factory) or isinstance(factory, str)):
        raise ConfigError(f"Expected a class, a callable or a 'module:attr' string for {name!r}, "
                          f"got {type(factory).__name__}")
    CONSOLIDATORS.register(name, factory, replace=replace)


def consolidator_names() -> tuple[str, ...]:
    """Every consolidator name this process can build: built-in, registered and installed as entry points."""
    return CONSOLIDATORS.names()


def split_name(name: str) -> tuple[str, str | None]:
    """``"grpo:runs/x/checkpoint-20"`` -> ``("grpo", "runs/x/checkpoint-20")``: a known name, a colon and an
    argument (a checkpoint) that the factory receives as ``checkpoint``. Other names pass through whole."""
    base, sep, arg = name.partition(":")
    if sep and base in consolidator_names() and name not in consolidator_names():
        return base, arg
    return name, None


def get_consolidator_factory(name: str) -> Callable[..., Consolidator]:
    """The class or factory registered as ``name`` (imported now); ``NAME:ARG`` names NAME's."""
    name = split_name(name)[0]
    if name not in CONSOLIDATORS:
        raise ConfigError(f"unknown consolidator {name!r}; known: {list(consolidator_names())}; {_HOW_TO_REGISTER}")
    return CONSOLIDATORS.get(name)


def make_consolidator(name: str, **kwargs: Any) -> Consolidator:
    """A new consolidator by registered name, built with ``kwargs``.

    Raises:
        ConfigError: ``name`` is unknown (the message lists the known names and how to register one), or
            its factory returned something without ``actions(env, obs, info)``.
    """
    argument = split_name(name)[1]
    if argument is not None:
        kwargs = {**kwargs, "checkpoint": argument}
    policy = get_consolidator_factory(name)(**kwargs)
    if not callable(getattr(policy, "actions", None)):
        raise ConfigError(f"consolidator {name!r} built a {type(policy).__name__}, which has no "
                          "actions(env, obs, info) method (see dreamer_gym.consolidators.Consolidator)")
    return policy
