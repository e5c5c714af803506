"""The floor plan holds: rooms import downwards only, no import cycles, one name per module.

The layers live in ``.importlinter`` (import-linter's own format, so ``lint-imports`` from the repository root
checks the same thing) and are drawn in docs/design-notes.md, "A map of the rooms"."""
from __future__ import annotations

import configparser
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dreamer_gym"
CONTRACT = ROOT / ".importlinter"

# Room-shape names: every room (or method package) has one of these, by design, so a reader knows what to
# expect inside (the room's protocol, its config dataclass, its registry; a method's trainer and consolidator).
ROOM_SHAPE = {"__init__", "__main__", "base", "config", "registry", "trainer", "consolidator"}


def _is_shim(path: Path) -> bool:
    """A deprecation shim left at a moved module's old path (dreamer_gym/_moved.py): it goes in 0.3."""
    return "from dreamer_gym._moved import" in path.read_text()


def _layers() -> list[list[str]]:
    parser = configparser.ConfigParser()
    parser.read(CONTRACT)
    raw = parser["importlinter:contract:layers"]["layers"]
    return [[name.strip(" ()") for name in re.split(r"[|:]", line)] for line in raw.strip().splitlines()]


def test_layers_contract_holds() -> None:
    """import-linter's layers contract: 0 imports from a lower room to a higher one (inside functions too)."""
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), str(CONTRACT), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report[-4000:]
    assert re.search(r"Contracts: \d+ kept, 0 broken", report), report[-2000:]


def test_every_room_is_in_the_plan() -> None:
    """A new top-level module or package must be placed in a layer (the contract is exhaustive too)."""
    planned = {name for layer in _layers() for name in layer}
    rooms = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    rooms |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert sorted(rooms - planned) == []


def test_no_import_cycles_between_modules() -> None:
    """No two modules reach each other through imports (grimp's graph, function-level imports included)."""
    import grimp

    graph = grimp.build_graph("dreamer_gym")
    cycles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=imported, imported=module):
                cycles.append((module, imported))
    assert cycles == []


def test_module_names_are_unique() -> None:
    """Two modules never share a name (three ``oplevel.py`` and two ``tracks.py`` were hard to tell apart),
    except the room-shape names above."""
    seen: dict[str, list[str]] = defaultdict(list)
    for path in PACKAGE.rglob("*.py"):
        if "data" in path.relative_to(PACKAGE).parts or _is_shim(path):
            continue
        seen[path.stem].append(str(path.relative_to(ROOT)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1 and name not in ROOM_SHAPE}
    assert clashes == {}


@pytest.mark.parametrize("room", ["service", "contract"])
def test_the_service_does_not_import_the_env(room: str) -> None:
    """The referee and the reward definition sit below the env: they never import ``dreamer_gym.envs``."""
    import grimp

    graph = grimp.build_graph("dreamer_gym")
    arrows = [(m, i) for m in graph.find_descendants(f"dreamer_gym.{room}") | {f"dreamer_gym.{room}"}
              for i in graph.find_modules_directly_imported_by(m) if i.startswith("dreamer_gym.envs")]
    assert arrows == []


def test_test_file_names_are_unique() -> None:
    """pytest imports test files by basename (rootdir ``prepend`` mode, no ``__init__.py``): two files named
    ``test_registry.py`` stop the whole collection ("import file mismatch"), so CI fails before a test runs."""
    seen: dict[str, list[str]] = defaultdict(list)
    for folder in (ROOT / "tests", ROOT / "research" / "tests"):
        for path in folder.rglob("*.py"):
            if path.name != "conftest.py" and "__pycache__" not in path.parts:
                seen[path.name].append(str(path.relative_to(ROOT)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert clashes == {}
