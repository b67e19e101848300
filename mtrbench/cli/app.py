"""The ``mtrbench`` parser and dispatcher. User errors print one line and exit 2; bugs keep their traceback.

Each command family has two modules: ``mtrbench.cli.flags.<family>`` declares its flags and registers itself as
``register(subparsers) -> {command name: "module:function"}``, importing only argparse, the flag types and light
constants; the handler named there (``mtrbench.cli.<family>``, with the family's domain imports) is imported only
when that command runs, so ``--help`` and a mistyped option never load it. Handlers turn the parsed arguments into
the typed options of the core functions; nothing outside this package sees an argparse Namespace.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from types import ModuleType
from typing import NoReturn

from mtrbench import __version__
from mtrbench.cli.common import Handler
from mtrbench.cli.flags import (
    assess,
    audit,
    encode,
    explore,
    export,
    fuse,
    generate,
    judge,
    leaderboard,
    meta,
    metrics,
    models,
    qrels,
    rag,
    score,
    show,
    simulate,
    synthesize,
    tasks,
)
from mtrbench.cli.flags import eval as eval_command
from mtrbench.infra.errors import MtrbenchError, UserInputError
from mtrbench.llm.redact_command import redact_argv

# In the order `mtrbench --help` lists them.
COMMAND_MODULES: tuple[ModuleType, ...] = (
    eval_command,
    score,
    show,
    meta,
    qrels,
    fuse,
    tasks,
    models,
    metrics,
    export,
    encode,
    audit,
    assess,
    synthesize,
    generate,
    judge,
    rag,
    leaderboard,
    explore,
    simulate,
)


# argparse's "argument -o/--output: MSG" for a value one of mtrbench.cli.flag_types refused
_FLAG_VALUE = re.compile(r"^argument (?P<names>[^:\s]+): (?P<problem>.*)$", re.DOTALL)


class UsageError(UserInputError):
    """A command line argparse could not read (unknown option, missing argument, a value off its range)."""


class Parser(argparse.ArgumentParser):
    """argparse's parser whose errors are one ``error:`` line and exit 2, like every other refusal of the CLI
    (argparse's own printed the usage first and named the command after the word error)."""

    def error(self, message: str) -> NoReturn:
        found = _FLAG_VALUE.match(message)
        if found:
            flag, problem = max(found["names"].split("/"), key=len), found["problem"]  # --top-k rather than -k
            if problem.startswith(f"{flag} "):  # the type's message names the flag itself
                raise UsageError(problem)
            if problem.startswith(("must ", "is ")):
                raise UsageError(f"{flag} {problem}")
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    """The whole ``mtrbench`` parser; each command's parser carries its handler's "module:function" name as the
    default ``handler`` (resolved by :func:`resolve_handler` when the command runs)."""
    parser = Parser(prog="mtrbench", description="Evaluate retrievers on multi-turn conversations.")
    parser.add_argument("--version", action="version", version=f"mtrbench {__version__}")
    sub = parser.add_subparsers(dest="command")
    seen: set[str] = set()
    for module in COMMAND_MODULES:
        handlers = module.register(sub)
        if seen & set(handlers) or set(handlers) - set(sub.choices):
            raise RuntimeError(f"{module.__name__}: commands {sorted(handlers)} clash or were not added")
        seen |= set(handlers)
        for name, handler in handlers.items():
            sub.choices[name].set_defaults(handler=handler)
    return parser


def resolve_handler(name: str) -> Handler:
    """The function a registration named as "package.module:function", imported now."""
    module, _, function = name.partition(":")
    handler: Handler = getattr(importlib.import_module(module), function)
    return handler


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return _run(argv)


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        # recorded in results as the reproducing command, by every command that records one: credentials masked here
        args.argv = redact_argv(sys.argv[1:] if argv is None else argv)
        if args.command is None:
            parser.print_help()
            return 0
        from mtrbench.infra.reporting import cli_output  # deferred: loads tqdm, which --help and usage errors skip

        with cli_output():  # the library's notes and warnings (logging) print as plain lines while a command runs
            return resolve_handler(args.handler)(args)
    except MtrbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


__all__ = ["COMMAND_MODULES", "Parser", "UsageError", "build_parser", "main", "resolve_handler"]
