"""Re-derive leaderboard entries: compare with results that already exist, else re-run their commands.

A leaderboard may come from anywhere, so its commands are screened before anything runs
(``screen_command``): only ``mtrbench eval`` with a registered model alias or Hugging Face id (never a local
folder), a registered task name (never a folder or card file) and evaluation settings whose values are
checked is re-run. ``--trust-remote-code``, and every option that names a path (``--cache-dir``,
``--output-dir``, ``--data-dir``, ``--corpus``, ...), are refused: where things are read and written is
decided by verify's own flags (``LocalOptions``). A refused entry is counted with the reason.

What passes is rebuilt as an argument list from the canonical option names (never a shell string) and run
once per distinct command, in a subprocess started in an empty folder, with ``--output-dir`` pointed at a
work folder; each command is printed before it runs. Results are matched to entries by identity (model,
revision, task, split, dataset revision, score-changing settings; a setting only one side records, from
an older or newer mtrbench, is ignored).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mtrbench
from mtrbench.errors import MtrbenchError, closest
from mtrbench.leaderboard.entries import SourcedEntry, load_result_entry, results_in
from mtrbench.leaderboard.keys import flatten, score_settings

OK, FAIL, SKIP, REFUSED = "OK", "FAIL", "SKIP", "REFUSED"
STATUSES = (OK, FAIL, SKIP, REFUSED)
IDENTITY_FIELDS = ("model", "model_revision", "task", "split", "dataset_revision")


@dataclass
class Mismatch:
    metric: str
    expected: float | None
    obtained: float | None


@dataclass
class Check:
    entry_id: str
    status: str
    how: str = ""  # "existing result <path>" | "re-run"
    reason: str = ""
    main_score: str = ""
    expected: float | None = None
    obtained: float | None = None
    compared: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)


def setup_differences(expected: dict[str, Any], obtained: dict[str, Any]) -> list[str]:
    """What differs in model, task, data and score-changing settings. A setting recorded on one side only
    (written by an older or newer mtrbench) is not a difference."""
    differences = [f"{k} {expected[k]!r} vs {obtained[k]!r}" for k in IDENTITY_FIELDS if expected[k] != obtained[k]]
    want, got = flatten(score_settings(expected)), flatten(score_settings(obtained))
    for key in sorted(set(want) & set(got)):
        if want[key] != got[key]:
            differences.append(f"{key} {want[key]!r} vs {got[key]!r}")
    return differences


def compare(expected: dict[str, Any], obtained: dict[str, Any], tolerance: float, how: str) -> Check:
    """Every stored metric of ``expected`` against ``obtained`` (absolute difference <= tolerance)."""
    main = expected["main_score"]
    check = Check(expected["id"], OK, how, main_score=main, expected=expected["scores"].get(main),
                  obtained=obtained["scores"].get(main))
    differences = setup_differences(expected, obtained)
    if differences:
        check.status, check.reason = FAIL, "settings differ: " + "; ".join(differences)
    for metric, value in expected["scores"].items():
        got = obtained["scores"].get(metric)
        check.compared += 1
        if got is None or abs(got - value) > tolerance:
            check.status = FAIL
            check.mismatches.append(Mismatch(metric, value, got))
    if check.mismatches and not check.reason:
        check.reason = f"{len(check.mismatches)} of {check.compared} metrics differ by more than {tolerance:g}"
    return check


# ------------------------------------------------------------------ which commands are re-run

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


@dataclass(frozen=True)
class Screened:
    """What verify makes of an entry's command: ``arguments`` to run, or why not (a refusal or a skip)."""

    arguments: list[str] | None
    reason: str = ""
    refused: bool = False


@dataclass(frozen=True)
class LocalOptions:
    """The user's own choices for re-runs (verify's flags), never the leaderboard file's."""

    cache_dir: Path | None = None
    data_dir: Path | None = None
    corpus: Path | None = None

    def arguments(self) -> list[str]:
        out: list[str] = []
        for option, path in (("--cache-dir", self.cache_dir), ("--data-dir", self.data_dir),
                             ("--corpus", self.corpus)):
            if path is not None:  # absolute: re-runs start in an empty folder of their own
                out.append(f"{option}={Path(path).expanduser().resolve()}")
        return out


def _hub_id(value: str) -> str | None:
    if HUB_ID.match(value) and ".." not in value:
        return None
    return "is not a Hugging Face id (org/name); local folders are never re-run"


def _model(value: str) -> str | None:
    from mtrbench.retrieve.registry import PAIR_SEPARATOR, REGISTRY

    if value in REGISTRY:
        return None
    if value.count(PAIR_SEPARATOR) == 1:  # QUERY_MODEL|DOC_MODEL: two Hub ids
        problems = [p for p in map(_hub_id, value.split(PAIR_SEPARATOR)) if p]
        return problems[0] if problems else None
    if _hub_id(value) is None:
        return None
    return "is neither a registered model alias (`mtrbench models`) nor a Hugging Face id (org/name); " \
           "local folders are never re-run"


def _task(value: str) -> str | None:
    from mtrbench.data.cards import all_cards

    if value in all_cards():
        return None
    return "is not a registered task name (`mtrbench tasks`); task folders and card files are never re-run"


def _histories(value: str) -> str | None:
    from mtrbench.serialize.history import get_strategy

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
    from mtrbench.metrics.trec_metrics import parse_k_values

    try:
        parse_k_values(value)
    except MtrbenchError:
        return "is not a comma list of positive integers"
    return None


def _metrics(value: str) -> str | None:
    from mtrbench.metrics.trec_metrics import parse_families

    try:
        families = parse_families(value.split(","))
    except MtrbenchError:
        return "names an unknown metric"
    return None if families else "names no metric"


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
    "--max-length": _positive,
    "--pooling": None,
    "--similarity": None,
    "--no-cache": None,
    "--top-k": _positive,
    "--k": _k_values,
    "--metrics": _metrics,
    "--ragalign-metric": _matches(METRIC_KEY, "a metric key"),
    "--ragalign-continuous": _matches(METRIC_KEY, "a metric key"),
    "--quiet": None,  # verify adds it anyway
}


@functools.lru_cache(maxsize=1)
def eval_options() -> dict[str, argparse.Action]:
    """`mtrbench eval`'s options, from its own parser: option string -> argparse action."""
    from mtrbench.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
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
    if action.type is int:
        try:
            int(value)
        except ValueError:
            return "is not an integer"
    if action.choices is not None and value not in action.choices:
        return f"is not one of {', '.join(map(str, action.choices))}"
    check = SAFE_OPTIONS[option]
    return check(value) if check is not None else None


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
    from mtrbench.data.cards import all_cards

    split = given.get("--split")
    if split is None:
        return None
    default_task = eval_options()["--task"].default
    card = all_cards().get(given.get("--task") or default_task)
    if card is not None and split not in card.splits:
        return f"--split {split!r}: task '{card.name}' has no such split ({', '.join(card.splits)})"
    return None


def _existing_result(entry: dict[str, Any], leaderboard_path: Path,
                     results_found: list[SourcedEntry]) -> SourcedEntry | None:
    found = next((s for s in results_found if not setup_differences(entry, s.entry)), None)
    if found is not None:
        return found
    result_file = entry["source"].get("result_file")
    if not result_file:
        return None
    for candidate in (Path(result_file), leaderboard_path.parent / result_file):
        if candidate.is_file():
            try:
                sourced = load_result_entry(candidate)
            except MtrbenchError:
                return None
            # The file at that place may since have been overwritten by another run: then re-run instead.
            return None if setup_differences(entry, sourced.entry) else sourced
    return None


def rerun_arguments(arguments: list[str], local: LocalOptions, output_dir: Path) -> list[str]:
    """The full `mtrbench` argument list of a re-run: the screened arguments, then the user's own places."""
    return [*arguments, *local.arguments(), f"--output-dir={Path(output_dir).resolve()}", "--quiet"]


def _run_command(arguments: list[str]) -> tuple[int, str]:
    # An empty folder as working directory: no relative name in the command (an org/name model id, a task
    # name) can resolve to something that happens to sit in the user's current folder.
    # The same mtrbench as this process, also when it is importable only from the user's folder.
    package_root = str(Path(mtrbench.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
    with tempfile.TemporaryDirectory(prefix="mtrbench-verify-cwd-") as cwd:
        completed = subprocess.run([sys.executable, "-m", "mtrbench.cli", *arguments], capture_output=True,
                                   text=True, cwd=cwd, env=env)
    lines = [line for line in (completed.stderr + "\n" + completed.stdout).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return completed.returncode, (errors[-1] if errors else (lines[-1] if lines else ""))


def _closest_obtained(entry: dict[str, Any], produced: list[SourcedEntry]) -> SourcedEntry | None:
    same = [p for p in produced if p.entry["model"] == entry["model"] and p.entry["task"] == entry["task"]]
    same.sort(key=lambda p: p.entry["settings"].get("history") != entry["settings"].get("history"))
    return same[0] if same else None


def verify(document: dict[str, Any], leaderboard_path: Path, *, tolerance: float = 1e-4,
           only: list[str] | None = None, results_dir: Path | None = None, work_dir: Path | None = None,
           rerun: bool = False, local: LocalOptions | None = None,
           say: Callable[[str], None] = lambda message: None) -> list[Check]:
    local = local or LocalOptions()
    entries = document["entries"]
    if only:
        known = {e["id"] for e in entries}
        for wanted in only:
            if wanted not in known:
                raise MtrbenchError(f"no entry '{wanted}' in {leaderboard_path}.{closest(wanted, known)}")
        entries = [e for e in entries if e["id"] in only]
    results_found: list[SourcedEntry] = []
    if results_dir is not None and not rerun:
        if not results_dir.is_dir():
            raise MtrbenchError(f"--results-dir {results_dir} is not a folder")
        results_found = results_in(results_dir)

    checks: dict[str, Check] = {}
    to_run: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        if entry["label"] == "reported":
            checks[entry["id"]] = Check(entry["id"], SKIP, reason="a published number: nothing to re-run")
            continue
        existing = None if rerun else _existing_result(entry, leaderboard_path, results_found)
        if existing is not None:
            checks[entry["id"]] = compare(entry, existing.entry, tolerance, f"existing result {existing.origin}")
            continue
        screened = screen_command(entry.get("command"))
        if screened.arguments is None:
            checks[entry["id"]] = Check(entry["id"], REFUSED if screened.refused else SKIP, reason=screened.reason)
            if screened.refused:
                say(f"{entry['id']}: {screened.reason}")
            continue
        to_run.setdefault(shlex.join(screened.arguments), []).append(entry)

    if to_run:
        temporary = None
        if work_dir is None:
            temporary = tempfile.TemporaryDirectory(prefix="mtrbench-verify-")
            work_dir = Path(temporary.name)
        try:
            for n, (command, waiting) in enumerate(to_run.items(), 1):
                output_dir = Path(work_dir).resolve() / f"run-{n}"
                arguments = rerun_arguments(shlex.split(command), local, output_dir)
                say(f"re-running {n}/{len(to_run)}: {shlex.join(['mtrbench', *arguments])}")
                status, last_line = _run_command(arguments)
                for entry in waiting:
                    checks[entry["id"]] = _check_rerun(entry, status, last_line, output_dir, tolerance)
        finally:
            if temporary is not None:
                temporary.cleanup()
    return [checks[e["id"]] for e in entries]


def _check_rerun(entry: dict[str, Any], status: int, last_line: str, output_dir: Path, tolerance: float) -> Check:
    if status == 2:  # a user error: a model, dataset or corpus this machine does not have
        return Check(entry["id"], SKIP, "re-run", reason=f"not runnable here: {last_line}")
    if status != 0:
        return Check(entry["id"], FAIL, "re-run", reason=f"command exited with status {status}: {last_line}")
    produced = results_in(output_dir)
    match = next((p for p in produced if not setup_differences(entry, p.entry)), None)
    if match is None:
        match = _closest_obtained(entry, produced)
        if match is None:
            return Check(entry["id"], FAIL, "re-run", reason="the command produced no result for this model and task")
    return compare(entry, match.entry, tolerance, "re-run")
