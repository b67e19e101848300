"""No NaN or infinity is ever written: every command's main outputs on the fixtures are walked, JSON parsed with a
hook that fails on the non-standard NaN/Infinity literals, and every whitespace- or tab-separated field of the text
files (runs, qrels, TSV) that reads as a number checked finite.

Commands run: eval (BM25 on the embedded sample, two histories), export (BEIR), score (a run, --per-query), compare
(--output), fuse, pool, meta power, leaderboard build, judge mtrag (lexical metrics, on predictions holding a NaN),
and the golden generate / judge scenarios (generate, judge run rating and verdict with RAGAlign, judge rad-bench
with a scripted judge and on released judgments)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from golden_outputs import SCENARIOS, run_scenario

from mtrbench.cli import main

MTRAG_PREDICTIONS = Path(__file__).resolve().parents[1] / "data" / "mtrag_eval" / "responses-4.jsonl"
TEXT_SUFFIXES = (".trec", ".tsv", ".txt", ".csv", ".qrels", ".md")


def _refuse_constant(name: str) -> float:
    raise AssertionError(f"non-finite JSON literal {name}")


def non_finite_in_json(text: str) -> str | None:
    try:
        json.loads(text, parse_constant=_refuse_constant)
    except AssertionError as exc:
        return str(exc)
    return None


def non_finite_in_text(text: str) -> str | None:
    for number, line in enumerate(text.splitlines(), 1):
        for field in line.replace("\t", " ").split(" "):
            try:
                value = float(field)
            except ValueError:
                continue
            if not math.isfinite(value):
                return f"line {number}: {field}"
    return None


def problems_under(root: Path) -> tuple[list[str], int]:
    """(one line per file holding a non-finite number, how many files were read)."""
    problems, read = [], 0
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".json":
            found = non_finite_in_json(text)
        elif path.suffix == ".jsonl":
            found = next((f for f in map(non_finite_in_json, filter(str.strip, text.splitlines())) if f), None)
        elif path.suffix in TEXT_SUFFIXES:
            found = non_finite_in_text(text)
        else:
            continue
        read += 1
        if found:
            problems.append(f"{path.relative_to(root)}: {found}")
    return problems, read


def test_the_walk_finds_what_it_is_for(tmp_path):
    (tmp_path / "a.json").write_text('{"x": NaN}')
    (tmp_path / "b.jsonl").write_text('{"x": 1}\n{"y": -Infinity}\n')
    (tmp_path / "c.trec").write_text("q1 Q0 d1 1 inf t\n")
    (tmp_path / "d.tsv").write_text("q1\td1\t1\n")
    problems, read = problems_under(tmp_path)
    assert read == 4 and [p.split(":")[0] for p in problems] == ["a.json", "b.jsonl", "c.trec"]


def run(*args: str) -> None:
    assert main(list(args)) == 0, args


def retrieval_commands(out: Path) -> None:
    results = out / "results"
    run("eval", "--model", "bm25", "--history", "current,full", "--output-dir", str(results), "--quiet")
    current, full = sorted(results.rglob("mtrbench-sample.json"), key=lambda p: "history=current" not in str(p))
    runs = [p.with_name("mtrbench-sample.run.trec") for p in (current, full)]
    beir = out / "beir"
    run("export", "mtrbench-sample", "--format", "beir", "--history", "full", "--truncate", "none", "--out", str(beir))
    [qrels] = beir.rglob("test.tsv")
    run("score", "--run", str(runs[0]), "--qrels", str(qrels), "--per-query", "--output", str(out / "score.json"))
    run("compare", str(current), str(full), "--test", "t", "--output", str(out / "compare.json"))  # t: no resampling
    run("fuse", *map(str, runs), "--method", "wsum", "--weights", "0.3,0.7", "-o", str(out / "wsum.trec"))
    pool = ["pool", *map(str, runs), "--qrels", str(qrels), "--refined-qrels", str(qrels)]
    run(*pool, "--orders", "3", "--output", str(out / "pool.json"))
    run("meta", "power", "--results", str(current), str(full), "--samples", "200", "--output", str(out / "power.json"))
    run("leaderboard", "build", str(results), "-o", str(out / "leaderboard.json"), "--description", "walk")
    # IBM's sample predictions hold a NaN of their own (pandas's missing list): written as null, as pandas writes it
    run("judge", "mtrag", str(MTRAG_PREDICTIONS), "--output-dir", str(out / "mtrag"), "--metrics", "Recall,Length")


def test_no_output_of_any_command_holds_nan_or_infinity(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # anything a command writes beside its outputs lands here, and is walked too
    retrieval_commands(tmp_path / "retrieval")
    for name in ("generate", "judge"):
        run_scenario(SCENARIOS[name], tmp_path / "llm")
    problems, read = problems_under(tmp_path)
    assert read >= 40, f"only {read} output files read: a command wrote less than expected"
    assert not problems, "\n".join(problems)
