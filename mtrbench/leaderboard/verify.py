"""Re-derive leaderboard entries: compare with results that already exist, else re-run their commands.

A leaderboard may come from anywhere, so its commands are screened before anything runs
(``mtrbench.cli.screen.screen_command``): only ``mtrbench eval`` with a registered model alias or Hugging Face id (never a local
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

import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mtrbench
from mtrbench.infra.errors import MtrbenchError, closest
from mtrbench.leaderboard.entries import REPORTED, LeaderboardEntry, SourcedEntry, load_result_entry, results_in
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


def setup_differences(expected: LeaderboardEntry, obtained: LeaderboardEntry) -> list[str]:
    """What differs in model, task, data and score-changing settings. A setting recorded on one side only
    (written by an older or newer mtrbench) is not a difference."""
    differences = [
        f"{k} {getattr(expected, k)!r} vs {getattr(obtained, k)!r}"
        for k in IDENTITY_FIELDS
        if getattr(expected, k) != getattr(obtained, k)
    ]
    want, got = flatten(score_settings(expected)), flatten(score_settings(obtained))
    for key in sorted(set(want) & set(got)):
        if want[key] != got[key]:
            differences.append(f"{key} {want[key]!r} vs {got[key]!r}")
    return differences


def compare(expected: LeaderboardEntry, obtained: LeaderboardEntry, tolerance: float, how: str) -> Check:
    """Every stored metric of ``expected`` against ``obtained`` (absolute difference <= tolerance)."""
    main = expected.main_score
    check = Check(
        expected.id,
        OK,
        how,
        main_score=main,
        expected=expected.scores.get(main),
        obtained=obtained.scores.get(main),
    )
    differences = setup_differences(expected, obtained)
    if differences:
        check.status, check.reason = FAIL, "settings differ: " + "; ".join(differences)
    for metric, value in expected.scores.items():
        got = obtained.scores.get(metric)
        check.compared += 1
        if got is None or abs(got - value) > tolerance:
            check.status = FAIL
            check.mismatches.append(Mismatch(metric, value, got))
    if check.mismatches and not check.reason:
        check.reason = f"{len(check.mismatches)} of {check.compared} metrics differ by more than {tolerance:g}"
    return check


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
        for option, path in (("--cache-dir", self.cache_dir), ("--data-dir", self.data_dir), ("--corpus", self.corpus)):
            if path is not None:  # absolute: re-runs start in an empty folder of their own
                out.append(f"{option}={Path(path).expanduser().resolve()}")
        return out


def _existing_result(
    entry: LeaderboardEntry, leaderboard_path: Path, results_found: list[SourcedEntry]
) -> SourcedEntry | None:
    found = next((s for s in results_found if not setup_differences(entry, s.entry)), None)
    if found is not None:
        return found
    result_file = entry.source.get("result_file")
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
        completed = subprocess.run(
            [sys.executable, "-m", "mtrbench.cli", *arguments], capture_output=True, text=True, cwd=cwd, env=env
        )
    lines = [line for line in (completed.stderr + "\n" + completed.stdout).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return completed.returncode, (errors[-1] if errors else (lines[-1] if lines else ""))


def _closest_obtained(entry: LeaderboardEntry, produced: list[SourcedEntry]) -> SourcedEntry | None:
    same = [p for p in produced if p.entry.model == entry.model and p.entry.task == entry.task]
    same.sort(key=lambda p: p.entry.history != entry.history)
    return same[0] if same else None


def verify(
    document: dict[str, Any],
    leaderboard_path: Path,
    *,
    tolerance: float = 1e-4,
    only: list[str] | None = None,
    results_dir: Path | None = None,
    work_dir: Path | None = None,
    rerun: bool = False,
    local: LocalOptions | None = None,
    screen: Callable[[str | None], Screened] | None = None,
    say: Callable[[str], None] = lambda message: None,
) -> list[Check]:
    """``screen`` turns an entry's recorded command into the arguments that may be re-run, or says why
    not (the CLI's ``screen_command``); without it nothing is re-run."""
    local = local or LocalOptions()
    entries = [LeaderboardEntry.from_json(e) for e in document["entries"]]
    if only:
        known = {e.id for e in entries}
        for wanted in only:
            if wanted not in known:
                raise MtrbenchError(f"no entry '{wanted}' in {leaderboard_path}.{closest(wanted, known)}")
        entries = [e for e in entries if e.id in only]
    results_found: list[SourcedEntry] = []
    if results_dir is not None and not rerun:
        if not results_dir.is_dir():
            raise MtrbenchError(f"--results-dir {results_dir} is not a folder")
        results_found = results_in(results_dir)

    checks: dict[str, Check] = {}
    to_run: dict[str, list[LeaderboardEntry]] = {}
    for entry in entries:
        if entry.label == REPORTED:
            checks[entry.id] = Check(entry.id, SKIP, reason="a published number: nothing to re-run")
            continue
        existing = None if rerun else _existing_result(entry, leaderboard_path, results_found)
        if existing is not None:
            checks[entry.id] = compare(entry, existing.entry, tolerance, f"existing result {existing.origin}")
            continue
        screened = screen(entry.command) if screen else Screened(None, "re-running is not enabled")
        if screened.arguments is None:
            checks[entry.id] = Check(entry.id, REFUSED if screened.refused else SKIP, reason=screened.reason)
            if screened.refused:
                say(f"{entry.id}: {screened.reason}")
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
                    checks[entry.id] = _check_rerun(entry, status, last_line, output_dir, tolerance)
        finally:
            if temporary is not None:
                temporary.cleanup()
    return [checks[e.id] for e in entries]


def _check_rerun(entry: LeaderboardEntry, status: int, last_line: str, output_dir: Path, tolerance: float) -> Check:
    if status == 2:  # a user error: a model, dataset or corpus this machine does not have
        return Check(entry.id, SKIP, "re-run", reason=f"not runnable here: {last_line}")
    if status != 0:
        return Check(entry.id, FAIL, "re-run", reason=f"command exited with status {status}: {last_line}")
    produced = results_in(output_dir)
    match = next((p for p in produced if not setup_differences(entry, p.entry)), None)
    if match is None:
        match = _closest_obtained(entry, produced)
        if match is None:
            return Check(entry.id, FAIL, "re-run", reason="the command produced no result for this model and task")
    return compare(entry, match.entry, tolerance, "re-run")
