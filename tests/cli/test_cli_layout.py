"""The command line is one package; nothing past it sees argparse or untyped option bags."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

import mtrbench
from mtrbench.cli import build_parser
from mtrbench.cli.app import COMMAND_MODULES, resolve_handler

PACKAGE = Path(mtrbench.__file__).resolve().parent
CLI = PACKAGE / "cli"
# Parameters that carry options or behaviour into core code: they must be typed, never Any, a plain
# dict of anything, or an argparse Namespace.
OPTION_LIKE = re.compile(r"option|config|callback|analys|progress|^say$|^args$")
UNTYPED = re.compile(r"\bAny\b|Namespace")
# A field may hold free-form data (dict[str, Any]) but not an untyped object or a callback.
UNTYPED_FIELD = re.compile(r"^Any\b|Namespace|Callable")


def _core_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        if CLI not in path.parents:
            yield path, ast.parse(path.read_text(), filename=str(path))


def _imported(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_argparse_and_the_cli_stay_inside_the_cli_package():
    offenders = []
    for path, tree in _core_modules():
        for name in _imported(tree):
            if name.split(".")[0] == "argparse" or name == "mtrbench.cli" or name.startswith("mtrbench.cli."):
                offenders.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert not offenders


def test_core_functions_take_typed_options():
    offenders = []
    for path, tree in _core_modules():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                typed = [(p.arg, p.annotation) for p in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
                untyped = UNTYPED
            elif isinstance(node, ast.ClassDef):  # dataclass fields such as EvalConfig.analyses
                typed = [
                    (s.target.id, s.annotation)
                    for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                ]
                untyped = UNTYPED_FIELD
            else:
                continue
            for name, annotation in typed:
                text = ast.unparse(annotation) if annotation else ""
                if OPTION_LIKE.search(name) and (not text or untyped.search(text)):
                    offenders.append(
                        f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}({name}: {text or 'unannotated'})"
                    )
    assert not offenders


def test_every_command_module_registers_the_same_way():
    """Each flags module registers its commands and names each handler as "module:function" in the handler
    module of the same family; every name resolves to a function."""
    for module in COMMAND_MODULES:
        assert module.__name__.startswith("mtrbench.cli.flags."), module.__name__
        sub = argparse.ArgumentParser().add_subparsers()
        handlers = module.register(sub)
        assert handlers and set(handlers) <= set(sub.choices), module.__name__
        family = module.__name__.rsplit(".", 1)[1]
        assert all(name.startswith(f"mtrbench.cli.{family}:") for name in handlers.values()), handlers
        assert all(callable(resolve_handler(name)) for name in handlers.values())
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    owner = {name: p.get_default("handler").partition(":")[0] for name, p in commands.items()}
    assert set(owner) == {
        "eval",
        "score",
        "show",
        "compare",
        "pool",
        "meta",
        "qrels",
        "fuse",
        "tasks",
        "models",
        "metrics",
        "export",
        "cache",
        "audit",
        "assess",
        "generate",
        "judge",
        "rag",
        "synthesize",
        "leaderboard",
        "plot",
        "explore",
        "simulate",
    }
    assert owner["cache"] == "mtrbench.cli.encode" and owner["plot"] == "mtrbench.cli.leaderboard"
    assert owner["fuse"] == "mtrbench.cli.fuse"


def test_flags_modules_import_no_handler_module():
    """A flags module imports argparse, the flag helpers and constants; never a handler module of mtrbench.cli
    (which would load its family's domain code with the parser)."""
    light = ("mtrbench.cli.common", "mtrbench.cli.flag_types", "mtrbench.cli.flags")
    offenders = []
    for path in sorted((CLI / "flags").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = (
                    [node.module] if node.module != "mtrbench.cli" else [f"mtrbench.cli.{a.name}" for a in node.names]
                )
            offenders += [
                f"{path.name} imports {m}" for m in modules if m.startswith("mtrbench.cli") and not m.startswith(light)
            ]
    assert not offenders


@pytest.mark.parametrize("concept", ["encode", "audit", "assess", "judge", "leaderboard", "llm", "synthesize"])
def test_concept_packages_keep_no_cli_module(concept):
    assert not (PACKAGE / concept / "cli.py").exists()
    assert not (PACKAGE / concept / "args.py").exists()
