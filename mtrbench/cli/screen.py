"""Which `mtrbench eval` commands recorded in a leaderboard may be re-run by `leaderboard verify`.

Only `mtrbench eval` with a registered model alias or Hugging Face id (never a local folder), a registered
task name (never a folder or card file) and evaluation settings whose values are checked passes.
``--trust-remote-code`` and every option that names a path are refused; where things are read and written
is decided by verify's own flags. Option names and types come from `mtrbench eval`'s own parser.
"""

from __future__ import annotations

import argparse
import functools
import re
import shlex
from collections.abc import Callable
from pathlib import Path

from mtrbench.cli.flag_types import FloatFlag, IntFlag
from mtrbench.cli.flags import eval as eval_flags
from mtrbench.data.cards import all_cards
from mtrbench.infra.errors import MtrbenchError
from mtrbench.leaderboard.verify import Screened
from mtrbench.retrieve.chunking import Chunking
from mtrbench.retrieve.registry import PAIR_SEPARATOR, REGISTRY
from mtrbench.serialize.history import get_strategy

HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
SPLIT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$")
DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d{1,2})?)$")
METRIC_KEY = re.compile(r"^[a-z][a-z_]{0,40}(_at_\d{1,4})?$")
DTYPES = ("auto", "fp32", "fp16", "bf16")
MAX_TEXT = 200

# Options a leaderboard's command may not carry, and why.
REFUSED_OPTIONS = {
    "--trust-remote-code": "would run code from the model's repository",
    "--cache-dir": "names a folder to write; verify uses yours (its --cache-dir)",
    "--output-dir": "names a folder to write; verify writes to its --work-dir",
    "--data-dir": "names a local folder; give verify --data-dir yourself",
    "--corpus": "names a local file; give verify --corpus yourself",
    "--refined-qrels": "names a local file",
    "--generation-judgments": "names a local file",
}


def _hub_id(value: str) -> str | None:
    if HUB_ID.match(value) and ".." not in value:
        return None
    return "is not a Hugging Face id (org/name); local folders are never re-run"


def _model(value: str) -> str | None:
    if value in REGISTRY:
        return None
    if value.startswith("hybrid:") and value.count("+") == 1:  # hybrid:DENSE+SPARSE, each leg checked alike
        problems = [p for p in map(_model, value[len("hybrid:") :].split("+")) if p]
        return problems[0] if problems else None
    if value.count(PAIR_SEPARATOR) == 1:  # QUERY_MODEL|DOC_MODEL: two Hub ids
        problems = [p for p in map(_hub_id, value.split(PAIR_SEPARATOR)) if p]
        return problems[0] if problems else None
    if _hub_id(value) is None:
        return None
    return (
        "is neither a registered model alias (`mtrbench models`) nor a Hugging Face id (org/name); "
        "local folders are never re-run"
    )


def _task(value: str) -> str | None:
    if value in all_cards():
        return None
    return "is not a registered task name (`mtrbench tasks`); task folders and card files are never re-run"


def _histories(value: str) -> str | None:
    names = [h.strip() for h in value.split(",") if h.strip()]
    if names == ["all"]:
        return None
    if not names:
        return "names no history strategy"
    for name in names:
        try:
            get_strategy(name)
        except MtrbenchError:
            return f"names '{name}', not a history strategy"
    return None


def _k_values(value: str) -> str | None:
    from mtrbench.measures import parse_k_values  # deferred: loads pytrec_eval

    try:
        parse_k_values(value)
    except MtrbenchError:
        return "is not a comma list of positive integers"
    return None


def _metrics(value: str) -> str | None:
    from mtrbench.measures import parse_measures  # deferred: loads pytrec_eval

    try:
        parse_measures(value.split(","), [10])
    except MtrbenchError:
        return "names an unknown metric or a malformed measure"
    return None


def _number_list(value: str, kind: type, low: float, high: float | None) -> str | None:
    try:
        numbers = [kind(v) for v in value.split(",") if v.strip()]
    except ValueError:
        return f"is not a comma list of {kind.__name__} values"
    if not numbers or any(n < low or (high is not None and n > high) for n in numbers):
        return f"must lie in [{low}, {high if high is not None else 'inf'}]"
    return None


def _chunking(value: str) -> str | None:
    try:
        Chunking.parse(value)
    except MtrbenchError:
        return "is not sentences:SIZE:STRIDE"
    return None


def _text(value: str) -> str | None:
    if len(value) > MAX_TEXT or not value.isprintable():
        return f"is not printable text of at most {MAX_TEXT} characters"
    return None


def _positive(value: str) -> str | None:
    return None if int(value) >= 1 else "must be positive"


def _matches(pattern: re.Pattern, what: str) -> Callable[[str], str | None]:
    return lambda value: None if pattern.match(value) and ".." not in value else f"is not {what}"


# Options re-run from a leaderboard, each with the check of its value (argparse's type and choices are
# applied first). Any other option of `mtrbench eval`, including ones added later, is refused.
SAFE_OPTIONS: dict[str, Callable[[str], str | None] | None] = {
    "--model": _model,
    "--query-model": _hub_id,
    "--doc-model": _hub_id,
    "--revision": _matches(REVISION, "a model revision (commit, branch or tag)"),
    "--task": _task,
    "--split": _matches(SPLIT_NAME, "a split name"),
    "--history": _histories,
    "--truncate": None,
    "--user-prefix": _text,
    "--assistant-prefix": _text,
    "--separator": _text,
    "--order": None,
    "--device": _matches(DEVICE, "auto, cpu, mps, cuda or cuda:N"),
    "--dtype": lambda value: None if value in DTYPES else f"is not one of {', '.join(DTYPES)}",
    "--batch-size": _positive,
    "--token-budget": _positive,
    "--unpad": None,
    "--engine-mode": None,
    "--max-length": _positive,
    "--pooling": None,
    "--similarity": None,
    "--no-cache": None,
    "--top-k": _positive,
    "--k": _k_values,
    "--metrics": _metrics,
    "--ragalign-metric": _matches(METRIC_KEY, "a metric key"),
    "--ragalign-continuous": _matches(METRIC_KEY, "a metric key"),
    "--alpha": lambda value: _number_list(value, float, 0.0, 1.0),
    "--candidate-k": lambda value: _number_list(value, int, 1, None),
    "--chunking": _chunking,
    "--rank-parents": None,
    "--rerank": _hub_id,  # a Hub cross-encoder; a local folder is never re-run
    "--rerank-k": _positive,
    "--rerank-batch-size": _positive,
    "--limit": _positive,
    "--overwrite-strategy": None,  # choices checked by argparse; verify's work folder starts empty anyway
    "--protocol": None,  # choices checked by argparse
    "--quiet": None,  # verify adds it anyway
}


@functools.lru_cache(maxsize=1)
def eval_options() -> dict[str, argparse.Action]:
    """`mtrbench eval`'s options, from its own parser: option string -> argparse action."""
    commands = argparse.ArgumentParser(prog="mtrbench").add_subparsers()
    eval_flags.register(commands)
    return dict(commands.choices["eval"]._option_string_actions)


def _canonical(word: str, options: dict[str, argparse.Action]) -> tuple[str | None, str]:
    """The long option ``word`` means, resolving unique prefixes as argparse does; (None, why) otherwise."""
    action = options.get(word)
    if action is None and word.startswith("--"):
        found = {id(a): a for name, a in options.items() if name.startswith(word)}
        if len(found) > 1:
            return None, f"{word} is ambiguous"
        action = next(iter(found.values()), None)
    if action is None:
        return None, f"{word} is not an `mtrbench eval` option"
    return next(o for o in action.option_strings if o.startswith("--")), ""


def _looks_like_option(word: str) -> bool:
    # argparse reads such a word as an option, never as the previous option's value
    return word.startswith("-") and " " not in word and not re.match(r"^-\d+$|^-\d*\.\d+$", word)


def _value_problem(option: str, value: str, action: argparse.Action) -> str | None:
    if action.type is int or isinstance(action.type, IntFlag):
        try:
            int(value)
        except ValueError:
            return "is not an integer"
    if action.choices is not None and value not in action.choices:
        return f"is not one of {', '.join(map(str, action.choices))}"
    check = SAFE_OPTIONS[option]
    problem = check(value) if check is not None else None
    if problem is None and isinstance(action.type, IntFlag | FloatFlag):
        try:  # the range eval itself will apply, so a screened command is never one eval refuses
            action.type(value)
        except argparse.ArgumentTypeError as exc:
            return str(exc)
    return problem


def screen_command(command: str | None) -> Screened:
    """The `mtrbench eval` arguments verify may run for a recorded command, or why it will not.

    Every option is resolved to its full name and checked against ``SAFE_OPTIONS``; the arguments returned
    are rebuilt from those names (``--option=value`` when a value starts with '-', so it stays a value).
    """
    if not command:
        return Screened(None, "no command recorded")

    def refuse(why: str) -> Screened:
        return Screened(None, f"refused: {why}", refused=True)

    try:
        words = shlex.split(command)
    except ValueError as exc:
        return refuse(f"the command cannot be parsed ({exc})")
    if len(words) < 2 or Path(words[0]).name != "mtrbench" or words[1] != "eval":
        return refuse("only `mtrbench eval` commands are re-run")
    options = eval_options()
    given: dict[str, str | None] = {}
    rest = words[2:]
    i = 0
    while i < len(rest):
        word = rest[i]
        i += 1
        if not word.startswith("--"):
            return refuse(f"unexpected argument {word!r}")
        name, has_inline, inline = word.partition("=")
        option, why = _canonical(name, options)
        if option is None:
            return refuse(why)
        if option in REFUSED_OPTIONS:
            return refuse(f"{option} {REFUSED_OPTIONS[option]}")
        if option not in SAFE_OPTIONS:
            return refuse(f"{option} is not among the settings verify re-runs")
        action = options[option]
        if action.nargs == 0:  # a flag
            if has_inline:
                return refuse(f"{option} takes no value")
            given[option] = None
            continue
        if has_inline:
            value = inline
        elif i < len(rest) and not _looks_like_option(rest[i]):
            value = rest[i]
            i += 1
        else:
            return refuse(f"{option} has no value")
        problem = _value_problem(option, value, action)
        if problem:
            return refuse(f"{option} {value!r} {problem}")
        given[option] = value  # repeated: the last one counts, as in argparse
    problem = _split_problem(given)
    if problem:
        return refuse(problem)
    arguments = ["eval"]
    for option, value in given.items():
        if option == "--quiet":
            continue
        if value is None:
            arguments.append(option)
        elif value.startswith("-"):
            arguments.append(f"{option}={value}")
        else:
            arguments += [option, value]
    return Screened(arguments)


def _split_problem(given: dict[str, str | None]) -> str | None:
    split = given.get("--split")
    if split is None:
        return None
    card = all_cards().get(given.get("--task") or eval_flags.DEFAULT_TASK)
    if card is not None and split not in card.splits:
        return f"--split {split!r}: task '{card.name}' has no such split ({', '.join(card.splits)})"
    return None
