"""The suite registry: name -> :class:`SuiteSpec`. One line per built-in suite, loaded on first lookup so
that ``import dreamer_gym`` imports no adapter; other packages add theirs with :func:`register_suite` or an
entry point in the ``dreamer_gym.suites`` group (``my-suite = "my_pkg.suite:SPEC"``).

The table is a :class:`dreamer_gym.registry.Registry`, the type every plug-in point uses; it only ever maps a
name to immutable data. Evaluation workers in other processes receive the spec itself, not the name.
"""
from __future__ import annotations

from dreamer_gym.errors import ConfigError
from dreamer_gym.registry import Registry
from dreamer_gym.suites.spec import SuiteSpec

ENTRY_POINT_GROUP = "dreamer_gym.suites"

# name -> "module:SPEC" of the built-in suites (the one line a new built-in suite adds)
BUILTIN: dict[str, str] = {
    "scienceworld": "dreamer_gym.suites.scienceworld:SPEC",
    "alfworld": "dreamer_gym.suites.alfworld:OFFICIAL_SPEC",
    "alfworld-gen": "dreamer_gym.suites.alfworld:GENERATED_SPEC",
    "miniwob": "dreamer_gym.suites.miniwob:SPEC",
    "webarena": "dreamer_gym.suites.webarena:SPEC",
    "latency": "dreamer_gym.suites.latency:SPEC",
}


def _is_spec(value: object) -> None:
    if not isinstance(value, SuiteSpec):
        raise TypeError(f"expected a SuiteSpec, got {value!r}")


SUITES: Registry[SuiteSpec] = Registry(
    "suite", ENTRY_POINT_GROUP, BUILTIN, option="suite", check=_is_spec,
    how="dreamer_gym.suites.register_suite(SuiteSpec(...)) or an entry point in the 'dreamer_gym.suites' group")


def register_suite(spec: SuiteSpec, *, replace: bool = False) -> SuiteSpec:
    """Make ``spec`` known by its name. Registering a different spec under a taken name needs ``replace``."""
    if not isinstance(spec, SuiteSpec):
        raise ConfigError(f"Expected a SuiteSpec, got {type(spec).__name__}; build one with SuiteSpec(name=..., ...)")
    SUITES.register(spec.name, spec, replace=replace)
    return spec


def suite_names() -> tuple[str, ...]:
    """Every suite name this process can build: built-in, registered and installed as entry points."""
    return SUITES.names()


def get_suite_spec(name: str) -> SuiteSpec:
    """The spec registered as ``name`` (built-ins and entry points are loaded on first use)."""
    spec = SUITES.get(name)
    if spec.name != name:
        raise ConfigError(f"{SUITES.reference(name)} should be a SuiteSpec named {name!r}, got {spec!r}")
    return spec


def check_available(name: str) -> None:
    """Fail at once, naming the fix, when suite ``name`` cannot run here (data, servers, browser, package)."""
    get_suite_spec(name).ensure_available()
