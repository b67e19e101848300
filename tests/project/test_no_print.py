"""Library code reports through ``logging`` and mtrbench.infra.reporting; only the command line (mtrbench/cli/)
calls print(). Every module is read with ``ast``: a call of the bare name ``print`` counts (the builtin, or a
``print`` imported in its place such as rich's); a method named print (``console.print``) does not: it writes
to a console the caller passed."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mtrbench"

# Modules still being moved to logging by the other parts of this change. The list ends empty.
BEING_MIGRATED: set[str] = set()


def print_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
    )


def library_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] != "cli"]


def test_no_print_in_library_code():
    found = {p.relative_to(PACKAGE).as_posix(): lines for p in library_modules() if (lines := print_calls(p))}
    unexpected = {name: lines for name, lines in found.items() if name not in BEING_MIGRATED}
    assert not unexpected, f"print() outside mtrbench/cli/ (log instead, or return what the CLI prints): {unexpected}"
    finished = sorted(BEING_MIGRATED - set(found))
    assert not finished, f"no print() left in {finished}: take them off BEING_MIGRATED"


def test_the_check_finds_calls_of_the_name_print_only(tmp_path):
    calls = tmp_path / "calls.py"
    calls.write_text("import sys\n\nprint('a', file=sys.stderr)\nconsole.print('b')\n\n\ndef f():\n    print()\n")
    assert print_calls(calls) == [3, 8]
    imported = tmp_path / "imported.py"
    imported.write_text("from rich import print\n\nprint('[b]x[/b]')\nlog.info('print(')\n")
    assert print_calls(imported) == [3]
