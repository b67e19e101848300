"""The pipeline and retrieve packages stay readable: no function over 80 lines, no module over 400 lines
(the assembly path was once one 154-line function; this keeps it split into steps)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mtrbench"
CHECKED = ("pipeline", "retrieve")
MAX_FUNCTION_LINES, MAX_MODULE_LINES = 80, 400


def _modules():
    for folder in CHECKED:
        yield from sorted((PACKAGE / folder).rglob("*.py"))


def test_the_checked_packages_have_modules():
    assert len(list(_modules())) >= 10


def test_no_function_over_80_lines():
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, long


def test_no_module_over_400_lines():
    long = [
        f"{p.relative_to(PACKAGE)} ({n} lines)"
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, long
