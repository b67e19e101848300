"""mtrbench imports its own modules at module level; an import written inside a function says why it waits.

Such an import is the exception for a heavy dependency (torch, openai, pytrec_eval, numpy...) that the
importing module does not load itself: its line, or one of its lines, carries ``# deferred: <reason>``. Read
with ``ast`` and ``tokenize`` (nothing is imported). ``tests/project/test_file_import_cycles.py`` keeps these
imports free of loops.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "mtrbench"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE  # this checkout's package, whichever one is installed
MARK = "# deferred:"


def _imports_own_module(stmt: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(stmt, ast.ImportFrom):
        return stmt.level > 0 or (stmt.module or "").split(".")[0] == PACKAGE
    return any(alias.name.split(".")[0] == PACKAGE for alias in stmt.names)


def _function_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of an mtrbench module written inside a function (nested ones too)."""
    pending: list[tuple[ast.AST, bool]] = [(tree, False)]
    while pending:
        node, in_function = pending.pop()
        if in_function and isinstance(node, (ast.Import, ast.ImportFrom)) and _imports_own_module(node):
            yield node
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        pending.extend((child, inside) for child in ast.iter_child_nodes(node))


def _comments(source: str) -> dict[int, str]:
    """Line number -> the comment on that line."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {token.start[0]: token.string for token in tokens if token.type == tokenize.COMMENT}


def unmarked_imports(path: Path) -> list[int]:
    """The lines of ``path``'s function-level imports of mtrbench modules that give no ``# deferred:`` reason."""
    source = path.read_text(encoding="utf-8")
    comments = _comments(source)
    unmarked = []
    for stmt in _function_imports(ast.parse(source, filename=str(path))):
        lines = range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)
        reasons = [comments[n][len(MARK) :].strip() for n in lines if comments.get(n, "").startswith(MARK)]
        if not any(reasons):
            unmarked.append(stmt.lineno)
    return sorted(unmarked)


# -- the finder itself ------------------------------------------------------------------------------------


def test_the_finder_wants_a_reason_on_function_level_imports_of_mtrbench_only(tmp_path):
    path = tmp_path / "module.py"
    path.write_text(
        "import json\n"
        "from mtrbench.top import fine\n"
        "def f():\n"
        "    import os\n"  # 4: not mtrbench
        "    from mtrbench.a import b\n"  # 5: no reason
        "    from mtrbench.c import d  # deferred: loads torch\n"
        "    from mtrbench.e import (  # deferred: loads openai\n"
        "        g,\n"
        "    )\n"
        "    from mtrbench.h import (\n"  # 10: a reason on a later line of the statement counts
        "        i,  # deferred: loads numpy\n"
        "    )\n"
        "    import mtrbench.j  # deferred:\n"  # 13: a mark without a reason
        "    from . import k  # a comment, not a reason\n"  # 14: relative: an mtrbench module
        "    s = '# deferred: in a string'; from mtrbench.l import m\n"  # 15: a string is no comment
        "    def inner():\n"
        "        import mtrbench.n\n"  # 17: nested function
        "class C:\n"
        "    from mtrbench.o import p\n"  # 19: a class body is not a function
        "    async def method(self):\n"
        "        from mtrbench.q import r\n"  # 21
    )
    assert unmarked_imports(path) == [5, 13, 14, 15, 17, 21]


# -- the package ------------------------------------------------------------------------------------------


def test_function_level_imports_of_mtrbench_modules_say_why_they_are_deferred():
    unmarked = [
        f"{relative}:{line}"
        for path in sorted(ROOT.rglob("*.py"))
        for line in unmarked_imports(path)
        if (relative := path.relative_to(ROOT).as_posix())
    ]
    assert not unmarked, (
        "import these at module level, or add '# deferred: <reason>' (a heavy dependency the module does not "
        f"load itself): {unmarked}"
    )
