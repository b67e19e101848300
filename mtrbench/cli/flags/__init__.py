"""Each command family's flags, one module a family: ``register(subparsers) -> {command: "module:function"}``.

These modules import argparse, :mod:`mtrbench.cli.flag_types` and light constant modules only (tests/cli/
test_cli_latency.py counts what building the parser imports); the handlers they name live in
``mtrbench.cli.<family>`` and are imported only when their command runs. A choice list or default that lives in a
heavy module is repeated here as a constant with a test that it equals the registry, or checked by the handler.
"""
