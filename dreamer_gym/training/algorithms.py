"""Training algorithms, by name: what ``dreamer-gym train --algo NAME`` runs (an open registry, like every plug-in point).

One :class:`Algorithm` says what ``train`` needs to know: a one-line summary (``--algo``'s help), the config
dataclass whose fields become ``train``'s flags over the ``--config`` YAML (None where a recipe holds the
settings, as TRL's), the modules it needs (checked before anything imports them, so a missing extra is one line
naming it) and ``run(config, options) -> exit status``. Built in: ``grpo`` and ``trl``
(:mod:`dreamer_gym.methods.grpo`), ``oplevel`` and ``sb3`` (:mod:`dreamer_gym.methods.oplevel`), named here by
``"module:attr"`` strings: this room sits below the methods and never imports them.

Add your own from outside the package, with no edit inside it::

    # my_pkg/algo.py
    from dreamer_gym.training import Algorithm

    @dataclass(frozen=True)
    class MyConfig:
        env_id: str = "MemoryConsolidation-ScienceWorld-v1"
        episodes: int = 1

    def run(config: MyConfig, options: TrainOptions) -> int: ...

    ALGORITHM = Algorithm(name="mine", summary="my trainer", run=run, config=MyConfig)

    # pyproject.toml
    [project.entry-points."dreamer_gym.algorithms"]
    mine = "my_pkg.algo:ALGORITHM"

or at run time, ``register_algorithm("mine", ALGORITHM)``; then ``dreamer-gym train --algo mine --config my.yaml
--episodes 2``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import yaml

from dreamer_gym.errors import ConfigError
from dreamer_gym.registry import Registry, resolve

OPTIONS: tuple[str, ...] = ("probe", "check", "resume")  # train's flags that no config dataclass holds


@dataclass(frozen=True)
class TrainOptions:
    """What ``train`` hands every algorithm besides its config: the flags outside the config dataclass."""

    config_path: Path | None = None  # the --config YAML (a recipe, for an algorithm without a config class)
    quiet: bool = False  # no progress bars
    probe: int = 0  # grpo: play this many groups per family with the untrained policy instead of training
    check: bool = False  # trl: validate the recipe and exit
    resume: bool = False  # trl: resume from the last checkpoint

    def given(self) -> tuple[str, ...]:
        """The names of the :data:`OPTIONS` set on this command line."""
        return tuple(name for name in OPTIONS if getattr(self, name))


@dataclass(frozen=True)
class Algorithm:
    """One training algorithm; see the module docstring.

    Args:
        name: the ``--algo`` value it is registered under.
        summary: one line for ``train --algo``'s help.
        run: ``run(config, options) -> int`` (exit status), or its ``"module:attr"``; ``config`` is the loaded
            config dataclass (None when ``config`` is None: read ``options.config_path``).
        config: the config dataclass (or its ``"module:attr"``), whose fields are ``train``'s flags; a
            ``load(path, **overrides)`` classmethod is used where it has one. None: a recipe holds the settings.
        needs: top-level modules the algorithm imports (its extra), checked before the config or run loads.
        options: which of :data:`OPTIONS` (``probe``, ``check``, ``resume``) it takes; any other given is an error.
    """

    name: str
    summary: str
    run: Callable[[Any, TrainOptions], int] | str
    config: type | str | None = None
    needs: tuple[str, ...] = ()
    options: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = sorted(set(self.options) - set(OPTIONS))
        if unknown:
            raise ConfigError(f"Algorithm {self.name!r}: expected `options` within {list(OPTIONS)}, got {unknown}")

    def config_class(self) -> type | None:
        """The config dataclass, imported now (after :attr:`needs` was checked)."""
        cls = resolve(self.config) if self.config is not None else None
        if cls is not None and not (isinstance(cls, type) and is_dataclass(cls)):
            raise ConfigError(f"Algorithm {self.name!r}: expected `config` to be a dataclass, got {cls!r}")
        return cls

    def check_options(self, options: TrainOptions) -> None:
        """Refuse the option flags this algorithm does not take, naming those it does."""
        refused = [f"--{name}" for name in options.given() if name not in self.options]
        if refused:
            takes = ", ".join(f"--{name}" for name in self.options) or "none of " + ", ".join(f"--{o}" for o in OPTIONS)
            raise ConfigError(f"{', '.join(refused)} {'is' if len(refused) == 1 else 'are'} not for --algo {self.name} "
                              f"(it takes {takes}); drop {'it' if len(refused) == 1 else 'them'}")

    def load_config(self, path: str | Path | None, overrides: dict[str, Any]) -> Any:
        """The config from ``path``'s YAML (None: the config class's defaults) with the non-None ``overrides`` (the
        flags given) on top; None when the algorithm has no config class."""
        cls = self.config_class()
        if cls is None:
            return None
        if path is None:
            return cls(**{k: v for k, v in overrides.items() if v is not None})
        if hasattr(cls, "load"):
            return cls.load(path, **overrides)
        data = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of {cls.__name__} fields, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{path}: unknown {cls.__name__} field(s) {unknown}; known: {sorted(known)}")
        return cls(**{**data, **{k: v for k, v in overrides.items() if v is not None}})

    def __call__(self, config: Any, options: TrainOptions) -> int:
        """Check the options, then run."""
        self.check_options(options)
        return int(resolve(self.run)(config, options) or 0)


def _check(value: Any) -> None:
    if not isinstance(value, Algorithm):
        raise TypeError(f"expected a dreamer_gym.training.Algorithm, got {type(value).__name__}")


GRPO = Algorithm(
    name="grpo", summary="our GRPO trainer (GRPOConfig, docs/grpo.md)",
    run="dreamer_gym.methods.grpo.trainer:run", config="dreamer_gym.methods.grpo.config:GRPOConfig",
    needs=("torch", "transformers", "peft"), options=("probe",))
TRL = Algorithm(
    name="trl", summary="TRL's GRPOTrainer (a trl_recipe YAML: its settings are in the recipe, no field flags)",
    run="dreamer_gym.methods.grpo.trl_recipe:run", config=None,
    needs=("torch", "transformers", "peft", "trl"), options=("check", "resume"))
OPLEVEL = Algorithm(
    name="oplevel", summary="the op-level policy (OpLevelConfig, docs/byo.md)",
    run="dreamer_gym.methods.oplevel.trainer:run", config="dreamer_gym.methods.oplevel.config:OpLevelConfig",
    needs=("torch",))
SB3 = Algorithm(
    name="sb3", summary="MaskablePPO on the op-level wrapper (SB3Config, docs/byo.md)",
    run="dreamer_gym.methods.oplevel.sb3:run", config="dreamer_gym.methods.oplevel.sb3:SB3Config",
    needs=("torch", "stable_baselines3", "sb3_contrib"))

ALGORITHMS: Registry[Algorithm] = Registry(
    kind="training algorithm", group="dreamer_gym.algorithms", option="--algo", check=_check,
    builtins={a.name: a for a in (GRPO, TRL, OPLEVEL, SB3)})


def register_algorithm(name: str, algorithm: Algorithm | str, *, replace: bool = False) -> None:
    """Make ``algorithm`` (or its ``"module:attr"``) ``train --algo NAME``'s; see the module docstring."""
    ALGORITHMS.register(name, algorithm, replace=replace)


def get_algorithm(name: str) -> Algorithm:
    """The algorithm registered as ``name`` (ConfigError listing the names when there is none)."""
    return ALGORITHMS.get(name)
