"""One small type for every plug-in point: a name -> implementation table, open to code and to entry points.

Every room that a user can extend (suites, consolidators, downstream agents, LLM backends, evaluation
executors, reward services, training algorithms, leaderboard tracks) keeps one :class:`Registry`. A name
maps to a ``"package.module:attr"`` string (imported on first use, so listing names imports nothing heavy)
or to the object itself. Three sources, looked up in this order:

1. :meth:`Registry.register` at run time (a name registered after ``import dreamer_gym`` works: choices are
   always checked against the live table, never frozen at import);
2. the package's built-ins (one line each);
3. installed entry points in the registry's group, e.g. in your package's ``pyproject.toml``::

       [project.entry-points."dreamer_gym.executors"]
       mine = "my_pkg.executor:MyExecutor"

Like Gymnasium's ``registry`` this is process-wide state, but it only ever maps a name to code or immutable
data. Helpers that must not import anything (``importable``, ``resolve``) live here too: this module sits at
the bottom of the package and imports only :mod:`dreamer_gym.errors`.
"""
from __future__ import annotations

import difflib
import importlib
import importlib.util
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from dreamer_gym.errors import ConfigError

T = TypeVar("T")


def importable(module: str) -> bool:
    """Whether ``module`` can be imported here, found without importing it (a dotted name imports its parents,
    which for the packages we check are light namespaces)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package
        return False


def resolve(ref: str | Any) -> Any:
    """``"package.module:attr"`` -> the attribute (imported now); anything else is returned as is."""
    if not isinstance(ref, str):
        return ref
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ValueError(f"Expected a 'package.module:attribute' reference, got {ref!r}")
    value: Any = importlib.import_module(module)
    for part in attr.split("."):
        value = getattr(value, part)
    return value


def callable_as(what: str) -> Callable[[Any], None]:
    """A :class:`Registry` ``check`` for plug-in points whose entries are classes or factories: ``what`` says how
    one is called, for the message (``"a factory taking an LLMConfig"``)."""

    def check(value: Any) -> None:
        if not callable(value):
            raise TypeError(f"it is a {type(value).__name__}, not {what}")

    return check


@dataclass
class Registry(Generic[T]):
    """Name -> implementation for one plug-in point; see the module docstring.

    Args:
        kind: what one entry is, for messages ("executor", "LLM backend").
        group: the entry-point group (``dreamer_gym.executors``).
        builtins: the package's own, ``name -> "module:attr"`` (or the object).
        option: the config field or flag that takes a name, for messages (``executor``, ``--algo``).
        check: called on each loaded object; raises ``TypeError`` or ``ValueError`` with what is wrong.
        how: how a user adds one, for messages (default: an entry point in ``group``, or the register function).
    """

    kind: str
    group: str
    builtins: Mapping[str, Any] = field(default_factory=dict)
    option: str = "name"
    check: Callable[[Any], None] | None = None
    how: str = ""
    _registered: dict[str, Any] = field(default_factory=dict, repr=False)
    _loaded: dict[str, Any] = field(default_factory=dict, repr=False)

    def register(self, name: str, target: Any, *, replace: bool = False) -> None:
        """Make ``target`` (the object, or a ``"module:attr"`` string) known as ``name``. Registering something
        else under a taken name needs ``replace``."""
        if not isinstance(name, str) or not name or ":" in name:
            raise ConfigError(f"Expected a {self.kind} name such as 'mine' (no colon), got {name!r}")
        known = self._registered.get(name, self.builtins.get(name))
        if not replace and isinstance(known, str) and not isinstance(target, str):
            known = self.get(name)  # the built-in itself, registered again (an executor re-registers its suite's spec)
        if known is not None and known is not target and known != target and not replace:
            raise ConfigError(f"A different {self.kind} is already registered as {name!r}; "
                              "pass replace=True to override it")
        self._registered[name] = target
        self._loaded.pop(name, None)

    def unregister(self, name: str) -> None:
        """Forget a name registered at run time (built-ins and entry points stay)."""
        self._registered.pop(name, None)
        self._loaded.pop(name, None)

    def _plugins(self) -> dict[str, str]:
        return {ep.name: ep.value for ep in entry_points(group=self.group)}

    def names(self) -> tuple[str, ...]:
        """Every name this process can load now: the built-ins in their declared order, then names registered
        at run time, then installed entry points (each once)."""
        return tuple(dict.fromkeys([*self.builtins, *self._registered, *self._plugins()]))

    def __contains__(self, name: object) -> bool:
        """Registered and built-in names answer without scanning the installed entry points (~5 ms a scan; every
        config that names a built-in checks it)."""
        if not isinstance(name, str):
            return False
        return name in self._registered or name in self.builtins or name in self._plugins()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def reference(self, name: str) -> Any:
        """What ``name`` points at, unloaded (a ``"module:attr"`` string or the object); raises for unknown."""
        for table in (self._registered, self.builtins):
            if name in table:
                return table[name]
        plugins = self._plugins()
        if name in plugins:
            return plugins[name]
        raise ConfigError(self.unknown_message(name))

    def unknown_message(self, name: object) -> str:
        names = self.names()
        close = difflib.get_close_matches(str(name), names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return (f"Expected `{self.option}` to be one of {list(names)}, got {name!r}{hint}; register your own "
                f"{self.kind} with {self.how_to()}")

    def how_to(self) -> str:
        if self.how:
            return self.how
        return f"an entry point in the {self.group!r} group (mine = \"my_pkg.module:attr\") or its register function"

    def get(self, name: str) -> Any:
        """The object registered as ``name``, imported now (and cached)."""
        if name in self._loaded:
            return self._loaded[name]
        ref = self.reference(name)
        try:
            value = resolve(ref)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigError(f"{self.kind} {name!r} points at {ref!r}, which cannot be loaded: "
                              f"{type(exc).__name__}: {exc}") from exc
        if self.check is not None:
            try:
                self.check(value)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"{self.kind} {name!r} ({ref!r}) is not usable as one: {exc}") from exc
        self._loaded[name] = value
        return value

    def validate(self, name: str) -> str:
        """``name`` if known (without importing it), else the ConfigError that lists the choices."""
        if name not in self:
            raise ConfigError(self.unknown_message(name))
        return name
