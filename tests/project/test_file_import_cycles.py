"""No two files of mtrbench import each other, directly or around a loop.

The graph is read with ``ast`` (nothing is imported): a node per module file, an edge for every import
statement of an mtrbench module, those written inside functions included, since they run too, only later.
Imports under ``if TYPE_CHECKING:`` are left out: they never run. ``from package import name`` points at
the submodule ``package/name.py`` when there is one, else at the package's ``__init__.py``. A package's own
``__init__`` is not an edge of its submodules (Python runs it before any of them, and counting it would
make every package a loop). ``importlib.import_module`` calls are not import statements and are not read.

Every strongly connected component of more than one file is a loop; all of them are reported at once.
``tests/project/test_import_cycles.py`` checks the same rule between subpackages.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "mtrbench"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE  # this checkout's package, whichever one is installed


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _import_statements(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, in functions and classes too, except under ``if TYPE_CHECKING:``."""
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)  # the body runs only for a type checker
            continue
        pending.extend(ast.iter_child_nodes(node))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_modules(stmt: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The mtrbench modules one import statement runs (names imported from a module map to that module)."""
    if isinstance(stmt, ast.Import):
        return {alias.name for alias in stmt.names if alias.name in modules}
    if stmt.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (stmt.level - 1)]
        source = ".".join(base + ([stmt.module] if stmt.module else []))
    else:
        source = stmt.module or ""
    found = set()
    for alias in stmt.names:
        submodule = f"{source}.{alias.name}"
        if submodule in modules:
            found.add(submodule)
        elif source in modules:
            found.add(source)
    return found


def file_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the mtrbench modules it imports (itself left out)."""
    paths = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    modules = set(paths)
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: set[str] = set()
        for stmt in _import_statements(tree):
            targets |= _imported_modules(stmt, module, path.name == "__init__.py", modules)
        graph[module] = targets - {module}
    return graph


def import_loops(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), sorted."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[frozenset[str]] = []

    def connect(node: str) -> None:
        index[node] = lowlink[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                lowlink[node] = min(lowlink[node], lowlink[target])
            elif target in on_stack:
                lowlink[node] = min(lowlink[node], index[target])
        if lowlink[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                loops.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(loops, key=sorted)


def _describe(loop: frozenset[str], graph: dict[str, set[str]]) -> str:
    edges = [f"{a} -> {b}" for a in sorted(loop) for b in sorted(graph[a] & loop)]
    return f"{{{', '.join(sorted(loop))}}}: " + "; ".join(edges)


# -- the finder itself ------------------------------------------------------------------------------------


def _write_package(root: Path, files: dict[str, str]) -> Path:
    package = root / PACKAGE
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def test_the_finder_reports_every_loop_and_no_chain():
    graph = {
        "a": {"b"},
        "b": {"c"},
        "c": {"a", "d"},  # a -> b -> c -> a
        "d": {"e"},
        "e": {"d"},  # d <-> e, reached from the first loop
        "f": {"a"},  # into a loop, not part of one
        "g": set(),
    }
    assert import_loops(graph) == [frozenset("abc"), frozenset("de")]
    assert import_loops({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_function_level_relative_and_submodule_imports_count_type_checking_ones_do_not(tmp_path):
    package = _write_package(
        tmp_path,
        {
            "__init__.py": "",
            "one/__init__.py": "from .mod import f\n",
            "one/mod.py": "def f():\n    from mtrbench.two import mod\n    return mod\n",
            "two/__init__.py": "",
            "two/mod.py": (
                "from typing import TYPE_CHECKING\n"
                "import mtrbench.three\n"
                "if TYPE_CHECKING:\n    from mtrbench.one.mod import f\nelse:\n    from ..errors import E\n"
            ),
            "three.py": "import json\nfrom mtrbench.two.mod import missing_name\n",
            "errors.py": "class E(Exception): ...\n",
        },
    )
    graph = file_graph(package)
    assert graph == {
        "mtrbench": set(),
        "mtrbench.errors": set(),
        "mtrbench.one": {"mtrbench.one.mod"},
        "mtrbench.one.mod": {"mtrbench.two.mod"},
        "mtrbench.two": set(),
        "mtrbench.two.mod": {"mtrbench.three", "mtrbench.errors"},
        "mtrbench.three": {"mtrbench.two.mod"},
    }
    assert import_loops(graph) == [frozenset({"mtrbench.two.mod", "mtrbench.three"})]


def test_a_name_imported_from_a_package_points_at_its_init(tmp_path):
    package = _write_package(
        tmp_path,
        {"__init__.py": "from mtrbench.sub import thing\n", "sub/__init__.py": "import mtrbench\nthing = 1\n"},
    )
    assert file_graph(package) == {"mtrbench": {"mtrbench.sub"}, "mtrbench.sub": {"mtrbench"}}


# -- the package ------------------------------------------------------------------------------------------


def test_the_graph_reads_the_package():
    graph = file_graph()
    assert len(graph) > 200
    assert "mtrbench.measures.base" in graph["mtrbench.measures.registry"]


def test_no_import_loops_between_files():
    graph = file_graph()
    loops = import_loops(graph)
    assert not loops, "import loops between mtrbench files:\n" + "\n".join(_describe(loop, graph) for loop in loops)
