"""Re-derive leaderboard entries: compare with results that already exist, else re-run their commands.

Only ``mtrbench eval`` commands are ever executed (never a shell): a leaderboard downloaded from
anywhere cannot make verify run something else. Each distinct command runs once, in a subprocess,
with ``--output-dir`` pointed at a work folder; its results are matched to entries by identity
(model, revision, task, split, dataset revision, score-changing settings; a setting only one side
records, from an older or newer mtrbench, is ignored).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.errors import MtrbenchError, closest
from mtrbench.leaderboard.entries import SourcedEntry, load_result_entry, normalize_command, results_in
from mtrbench.leaderboard.keys import flatten, score_settings

OK, FAIL, SKIP = "OK", "FAIL", "SKIP"
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


def eval_arguments(command: str | None) -> tuple[list[str] | None, str]:
    """(`mtrbench eval` arguments without output options, why not runnable)."""
    if not command:
        return None, "no command recorded"
    try:
        words = shlex.split(normalize_command(command) or "")
    except ValueError as exc:
        return None, f"command cannot be parsed ({exc})"
    if len(words) < 2 or Path(words[0]).name != "mtrbench" or words[1] != "eval":
        return None, "only `mtrbench eval` commands are re-run"
    return words[1:], ""


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


def _run_command(arguments: list[str], output_dir: Path) -> tuple[int, str]:
    argv = [sys.executable, "-m", "mtrbench.cli", *arguments, "--output-dir", str(output_dir), "--quiet"]
    completed = subprocess.run(argv, capture_output=True, text=True)
    lines = [line for line in (completed.stderr + "\n" + completed.stdout).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return completed.returncode, (errors[-1] if errors else (lines[-1] if lines else ""))


def _closest_obtained(entry: dict[str, Any], produced: list[SourcedEntry]) -> SourcedEntry | None:
    same = [p for p in produced if p.entry["model"] == entry["model"] and p.entry["task"] == entry["task"]]
    same.sort(key=lambda p: p.entry["settings"].get("history") != entry["settings"].get("history"))
    return same[0] if same else None


def verify(document: dict[str, Any], leaderboard_path: Path, *, tolerance: float = 1e-4,
           only: list[str] | None = None, results_dir: Path | None = None, work_dir: Path | None = None,
           rerun: bool = False, say: Callable[[str], None] = lambda message: None) -> list[Check]:
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
        arguments, why_not = eval_arguments(entry.get("command"))
        if arguments is None:
            checks[entry["id"]] = Check(entry["id"], SKIP, reason=why_not)
            continue
        to_run.setdefault(shlex.join(arguments), []).append(entry)

    if to_run:
        temporary = None
        if work_dir is None:
            temporary = tempfile.TemporaryDirectory(prefix="mtrbench-verify-")
            work_dir = Path(temporary.name)
        try:
            for n, (command, waiting) in enumerate(to_run.items(), 1):
                say(f"re-running {n}/{len(to_run)}: mtrbench {command}")
                output_dir = Path(work_dir) / f"run-{n}"
                status, last_line = _run_command(shlex.split(command), output_dir)
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
