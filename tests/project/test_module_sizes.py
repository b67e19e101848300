"""mtrbench stays readable: no function over 80 lines anywhere in the package, and no module over 400 lines in
pipeline/ and retrieve/ (the assembly path was once one 154-line function; this keeps it split into steps)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mtrbench"
SIZE_CHECKED = ("pipeline", "retrieve")  # the module-size limit
MAX_FUNCTION_LINES, MAX_MODULE_LINES = 80, 400


def _modules(folders: tuple[str, ...] = ()) -> Iterator[Path]:
    if not folders:
        yield from sorted(PACKAGE.rglob("*.py"))
    for folder in folders:
        yield from sorted((PACKAGE / folder).rglob("*.py"))


def _long_functions() -> list[tuple[str, str, int, int]]:
    """(module path under mtrbench/, name, first line, lines) of every function over the limit."""
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append((path.relative_to(PACKAGE).as_posix(), node.name, node.lineno, lines))
    return long


def test_the_checked_packages_have_modules():
    assert len(list(_modules(SIZE_CHECKED))) >= 10
    assert len(list(_modules())) > 200


def test_no_function_over_80_lines():
    long = [f"{path}:{line} {name} ({lines} lines)" for path, name, line, lines in _long_functions()]
    assert not long, long


def test_no_module_over_400_lines():
    long = [
        f"{p.relative_to(PACKAGE)} ({n} lines)"
        for p in _modules(SIZE_CHECKED)
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, long
