"""Dependencies between ding_lite's packages point one way: the table under "Layering" in docs/architecture.md says
which packages each may import, and this test holds every import statement of the package (lazy ones included) to it."""
import ast
import pathlib
import re
from typing import Dict, Set

import ding_lite

ROOT = pathlib.Path(ding_lite.__file__).parent
ARCHITECTURE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def allowed_imports(text: str) -> Dict[str, Set[str]]:
    """package -> the ding_lite packages it may import, from the table of the "## Layering" section of ``text``."""
    section = text.split("\n## Layering\n", 1)[1].split("\n## ", 1)[0]
    allowed = {}
    for row in re.findall(r"^\| `(\w+)` \|(.*)\|$", section, re.M):
        allowed[row[0]] = set(re.findall(r"`(\w+)`", row[1]))
    return allowed


ALLOWED = allowed_imports(ARCHITECTURE.read_text())


def imported_packages(path: pathlib.Path, root: pathlib.Path = ROOT) -> Set[str]:
    """The ding_lite packages the module at ``path`` (under the package's ``root``) imports (absolute or relative, at
    any depth)."""
    package = path.relative_to(root).parts[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                names = [".".join(("ding_lite",) + base + ((node.module,) if node.module else ()))]
            else:
                names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        out.update(name.split(".")[1] for name in names if name.startswith("ding_lite."))
    return out


def packages_of_sources() -> Dict[str, Set[str]]:
    graph: Dict[str, Set[str]] = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).parts
        if len(parts) > 1:
            graph.setdefault(parts[0], set()).update(imported_packages(path) - {parts[0]})
    return graph


def layering_errors(graph: Dict[str, Set[str]], allowed: Dict[str, Set[str]]) -> Dict[str, list]:
    """package -> the packages it imports against ``allowed``."""
    return {pkg: sorted(deps - allowed.get(pkg, set())) for pkg, deps in graph.items() if deps - allowed.get(pkg, set())}


def test_every_package_imports_only_the_layers_below_it():
    graph = packages_of_sources()
    assert set(graph) == set(ALLOWED), "a package was added or removed: place it in docs/architecture.md#layering"
    wrong = layering_errors(graph, ALLOWED)
    assert not wrong, f"imports against the layering (docs/architecture.md#layering): {wrong}"


def test_the_allowed_layering_has_no_cycle():
    assert len(ALLOWED) >= 10, "the Layering table of docs/architecture.md was not read"
    assert all(deps <= set(ALLOWED) for deps in ALLOWED.values()), "the table names a package it has no row for"
    done: Set[str] = set()

    def visit(pkg: str, path: tuple) -> None:
        assert pkg not in path, f"cycle: {' -> '.join(path + (pkg,))}"
        if pkg not in done:
            for dep in ALLOWED[pkg]:
                visit(dep, path + (pkg,))
            done.add(pkg)

    for pkg in ALLOWED:
        visit(pkg, ())


def test_an_import_up_the_layers_is_caught(tmp_path):
    """The check above proves nothing if it lets an up-import through: a worker module importing the entry points
    is reported."""
    module = tmp_path / "worker" / "up.py"
    module.parent.mkdir()
    module.write_text("def late():\n    from ding_lite.entry.training_loop import TrainingRun\n")
    graph = packages_of_sources()
    graph["worker"] = graph["worker"] | imported_packages(module, root=tmp_path)
    assert layering_errors(graph, ALLOWED) == {"worker": ["entry"]}


def test_the_import_reader_sees_relative_and_lazy_imports():
    """The check above proves nothing if the reader misses imports: a relative import from a subpackage and an
    import inside a function are both seen."""
    module = ROOT / "parallel" / "roles.py"
    assert {"worker", "envs", "torch_utils", "utils"} <= imported_packages(module)  # roles imports worker lazily
    assert "config" in imported_packages(ROOT / "entry" / "parallel.py")
    assert imported_packages(ROOT / "config" / "defaults.py") >= {"utils"}
