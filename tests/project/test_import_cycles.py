"""The packages of mtrbench import one another without cycles.

Every module is read with ``ast`` (nothing is imported), every import statement counts, those inside
functions too, and each imported name is mapped to its node: the subpackage under ``mtrbench`` it lives
in (``mtrbench.data.loaders.beir`` -> ``data``) or, for a top-level module, the module itself
(``mtrbench.errors`` -> ``errors``). The graph of those nodes must have no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "mtrbench"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE  # this checkout's package, whichever one is installed


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _node(module: str) -> str | None:
    """``mtrbench.a.b.c`` -> ``a``; ``mtrbench`` itself and modules outside the package -> None."""
    parts = module.split(".")
    if parts[0] != PACKAGE or len(parts) < 2:
        return None
    return parts[1]


def _imported(tree: ast.Module, module: str, is_package: bool, root: Path) -> set[str]:
    """Full names of the mtrbench modules (or names in them) that a module imports."""
    names: set[str] = set()
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Import):
            names.update(alias.name for alias in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            if stmt.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (stmt.level - 1)]
                source = ".".join(base + ([stmt.module] if stmt.module else []))
            else:
                source = stmt.module or ""
            for alias in stmt.names:
                # ``from mtrbench import cli`` imports the module mtrbench.cli; ``__version__`` is a name
                is_module = (root / f"{alias.name}.py").is_file() or (root / alias.name).is_dir()
                names.add(f"{source}.{alias.name}" if source == PACKAGE and is_module else source)
    return names


def package_graph(root: Path = ROOT) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        source = _node(module)
        if source is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets = {_node(name) for name in _imported(tree, module, path.name == "__init__.py", root)}
        graph.setdefault(source, set()).update(t for t in targets if t is not None and t != source)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a closed path ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def all_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Cycles found by removing one edge of each found cycle until none is left (each edge listed once)."""
    graph = {node: set(targets) for node, targets in graph.items()}
    cycles = []
    while (cycle := find_cycle(graph)) is not None:
        cycles.append(cycle)
        graph[cycle[0]].discard(cycle[1])
    return cycles


def test_the_cycle_finder_finds_a_cycle_and_its_path():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_imports_inside_functions_and_relative_imports_count(tmp_path):
    pkg = tmp_path / PACKAGE
    (pkg / "one").mkdir(parents=True)
    (pkg / "two").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "one" / "__init__.py").write_text("from .mod import f\n")
    (pkg / "one" / "mod.py").write_text("def f():\n    from mtrbench.two.mod import g\n    return g\n")
    (pkg / "two" / "__init__.py").write_text("")
    (pkg / "two" / "mod.py").write_text("from ..one import f\nfrom mtrbench import errors\n")
    (pkg / "errors.py").write_text("import json\n")
    graph = package_graph(pkg)
    assert graph == {"one": {"two"}, "two": {"one", "errors"}, "errors": set()}
    assert find_cycle(graph) == ["one", "two", "one"]


def test_no_import_cycles_between_packages():
    cycles = all_cycles(package_graph())
    assert not cycles, "import cycles between mtrbench packages:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_formats_is_the_bottom_layer():
    assert package_graph()["formats"] <= {"infra"}
    assert package_graph()["infra"] == set()
