"""Every LLM path asks through the one stage runner (mtrbench/llm/stage.py), and the loop's pieces (the cost
question, client construction, a client's run) are not written again outside it.

Read with ``ast``; nothing is imported. A new LLM path that builds its own loop fails here with the call named."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mtrbench"

# The module of each LLM command that declares its stage(s) for the runner.
PATHS = {
    "generate / rag (answers)": "generation/runner.py",
    "eval --history rewrite:llm / summary:llm": "generation/model_history.py",
    "audit": "audit/mtr_eval.py",
    "assess": "assess/runner.py",
    "assess --method umbrela": "assess/umbrela.py",
    "judge run / judge rad-bench": "judge/engine.py",
    "judge mtrag": "judge/mtrag/judges.py",
    "judge nuggets (creation, labels, assignment, citation support)": "judge/nuggets/steps.py",
    "synthesize": "synthesize/generate.py",
}

# Calls that belong to the runner (and the modules that define them). ``make_client``/``make_async_client`` may be
# called where a path shares one client between stages (generate) or owns async clients (assess, synthesize).
RUNNER_ONLY = {"confirm_cost", "print_dry_run", "dry_run_text"}
ALLOWED = {"llm/stage.py", "llm/cost.py"}
# assess confirms one cost upper bound over all its passes (pre-filter, debate rounds, adjudication) before the
# first of them, then runs each pass with arun_stages(confirm=False); its dry run shows the first pass's prompts.
KNOWN = {("assess/assessment.py", "confirm_cost"), ("assess/assessment.py", "print_dry_run")}


def _imports_stage(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "mtrbench.llm.stage":
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "mtrbench.llm":
            if any(alias.name == "stage" for alias in node.names):
                return True
        if isinstance(node, ast.Import) and any(alias.name == "mtrbench.llm.stage" for alias in node.names):
            return True
    return False


def _called_names(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "")
    return names


def test_every_llm_path_imports_the_stage_runner():
    missing = {command: module for command, module in PATHS.items() if not _imports_stage(PACKAGE / module)}
    assert not missing, f"LLM paths that do not use mtrbench.llm.stage: {missing}"


def test_the_runners_calls_are_made_only_by_the_runner():
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name in ALLOWED or name.startswith("cli/"):
            continue
        found |= {(name, call) for call in _called_names(path) & RUNNER_ONLY}
    assert found - KNOWN == set(), f"the stage runner's steps written outside it: {sorted(found - KNOWN)}"
    assert KNOWN <= found, f"no longer called there, remove from KNOWN: {sorted(KNOWN - found)}"


def test_the_checks_see_what_they_look_for(tmp_path):
    uses = tmp_path / "uses.py"
    uses.write_text("from mtrbench.llm.stage import run_stages\n\nconfirm_cost([], True)\ncost.print_dry_run(x)\n")
    assert _imports_stage(uses)
    assert _called_names(uses) & RUNNER_ONLY == {"confirm_cost", "print_dry_run"}
    other = tmp_path / "other.py"
    other.write_text("from mtrbench.llm.cost import confirm_cost\n\nimport mtrbench.llm.stage_notes\n")
    assert not _imports_stage(other)
