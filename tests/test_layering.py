"""Dependencies between ding_lite's packages point one way (shared/DESIGN.md): entry -> parallel -> worker -> policy
-> model / rl_utils -> torch_utils / utils. Read from the source's import statements, lazy imports included."""
import ast
import pathlib
from typing import Dict, Set

import ding_lite

ROOT = pathlib.Path(ding_lite.__file__).parent
LOW = {"utils", "torch_utils"}
# package -> the ding_lite packages it may import
ALLOWED: Dict[str, Set[str]] = {
    "utils": set(),
    "torch_utils": {"utils"},
    "rl_utils": {"torch_utils"},  # pure loss math
    "model": LOW,
    "envs": LOW,
    "data": LOW,
    "analysis": {"utils"},
    "policy": {"model", "rl_utils", "envs"} | LOW,
    "worker": {"policy", "envs", "data"} | LOW,
    "parallel": {"worker", "policy", "envs"} | LOW,  # a transport: never the config layer or the entry points
    # compile_config reads the declared defaults of every component (never the pipelines that run them)
    "config": {"worker", "policy", "model", "envs", "data"} | LOW,
    "entry": {"config", "parallel", "worker", "policy", "model", "rl_utils", "envs", "data", "analysis"} | LOW,
}


def imported_packages(path: pathlib.Path) -> Set[str]:
    """The ding_lite packages the module at ``path`` imports (absolute or relative, at any depth)."""
    package = path.relative_to(ROOT).parts[:-1]
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


def test_every_package_imports_only_the_layers_below_it():
    graph = packages_of_sources()
    assert set(graph) == set(ALLOWED), "a package was added or removed: place it in ALLOWED"
    wrong = {pkg: sorted(deps - ALLOWED[pkg]) for pkg, deps in graph.items() if deps - ALLOWED[pkg]}
    assert not wrong, f"imports against the layering: {wrong}"


def test_the_allowed_layering_has_no_cycle():
    done: Set[str] = set()

    def visit(pkg: str, path: tuple) -> None:
        assert pkg not in path, f"cycle: {' -> '.join(path + (pkg,))}"
        if pkg not in done:
            for dep in ALLOWED[pkg]:
                visit(dep, path + (pkg,))
            done.add(pkg)

    for pkg in ALLOWED:
        visit(pkg, ())


def test_the_import_reader_sees_relative_and_lazy_imports(tmp_path):
    """The check above proves nothing if the reader misses imports: a relative import from a subpackage and an
    import inside a function are both seen."""
    module = ROOT / "parallel" / "roles.py"
    assert {"worker", "envs", "torch_utils", "utils"} <= imported_packages(module)  # roles imports worker lazily
    assert "config" in imported_packages(ROOT / "entry" / "parallel.py")
    assert imported_packages(ROOT / "config" / "defaults.py") >= {"utils"}
