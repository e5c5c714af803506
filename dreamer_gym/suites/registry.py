"""The suite registry: name -> :class:`SuiteSpec`. One line per built-in suite, loaded on first lookup so
that ``import dreamer_gym`` imports no adapter; other packages add theirs with :func:`register_suite` or an
entry point in the ``dreamer_gym.suites`` group (``my-suite = "my_pkg.suite:SPEC"``).

Like Gymnasium's ``registry``, this is the one process-wide table the package keeps; it only ever maps a
name to immutable data. Evaluation workers in other processes receive the spec itself, not the name.
"""
from __future__ import annotations

from importlib.metadata import entry_points

from dreamer_gym.errors import ConfigError
from dreamer_gym.suites.spec import SuiteSpec, resolve

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

_REGISTERED: dict[str, SuiteSpec] = {}


def register_suite(spec: SuiteSpec, *, replace: bool = False) -> SuiteSpec:
    """Make ``spec`` known by its name. Registering a different spec under a taken name needs ``replace``."""
    if not isinstance(spec, SuiteSpec):
        raise ConfigError(f"Expected a SuiteSpec, got {type(spec).__name__}; build one with SuiteSpec(name=..., ...)")
    known = _REGISTERED.get(spec.name)
    if known is not None and known != spec and not replace:
        raise ConfigError(f"A different suite is already registered as {spec.name!r}; pass replace=True to override it")
    _REGISTERED[spec.name] = spec
    return spec


def _plugin_refs() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def suite_names() -> tuple[str, ...]:
    """Every suite name this process can build: built-in, registered and installed as entry points."""
    return tuple(sorted({*BUILTIN, *_REGISTERED, *_plugin_refs()}))


def get_suite_spec(name: str) -> SuiteSpec:
    """The spec registered as ``name`` (built-ins and entry points are loaded on first use)."""
    spec = _REGISTERED.get(name)
    if spec is not None:
        return spec
    ref = BUILTIN.get(name) or _plugin_refs().get(name)
    if ref is None:
        raise ConfigError(f"Expected `suite` to be one of {list(suite_names())}, got {name!r}; "
                          "register your own with dreamer_gym.suites.register_suite(SuiteSpec(...))")
    spec = resolve(ref)
    if not isinstance(spec, SuiteSpec) or spec.name != name:
        raise ConfigError(f"{ref} should be a SuiteSpec named {name!r}, got {spec!r}")
    return register_suite(spec)


def check_available(name: str) -> None:
    """Fail at once, naming the fix, when suite ``name`` cannot run here (data, servers, browser, package)."""
    get_suite_spec(name).ensure_available()
