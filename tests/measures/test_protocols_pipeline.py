"""The protocol through `mtrbench eval`, `mtrbench.evaluate`'s plan and `mtrbench score`: recorded, kept apart,
and trec_eval unchanged."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import pytrec_eval

from mtrbench.cli import main as cli_main
from mtrbench.data import load_task
from mtrbench.data.cards import get_card
from mtrbench.pipeline.plan import EvalConfig, make_plan
from mtrbench.retrieve import RetrieverOptions, assemble, resolve

MTRAGUN = Path(__file__).parents[1] / "data" / "mtragun"


@pytest.fixture(scope="module")
def bm25():
    return assemble(resolve("bm25"), RetrieverOptions())


@pytest.mark.parametrize(
    "protocol,prefixed,setting,folder",
    [(None, True, "official:mtr-suite", True), ("trec_eval", False, "trec_eval", False)],
)
def test_mtr_plan_prefixes_the_first_turn_only_under_official(bm25, tmp_path, protocol, prefixed, setting, folder):
    config = EvalConfig(histories=["full", "current"], output_dir=tmp_path, protocol=protocol)
    plan = make_plan("bm25", get_card("mtr-bench"), config, bm25, False)
    full, current = (p.history.strategy for p in plan.histories)
    assert full.prefix_first_turn is prefixed and current.prefix_first_turn is False
    assert {p.settings["protocol"] for p in plan.histories} == {setting}
    assert ("protocol=official" in str(plan.histories[0].paths.json)) is folder


def _stand_in_task(tmp_path: Path) -> Path:
    """MTRAG-UN fiqa's released queries and qrels over a corpus of its reference passages' texts."""
    task = load_task("mtragun-fiqa", data_dir=MTRAGUN, require_corpus=False)
    passages = {d: f"{q.query} {q.answers[0] if q.answers else ''}" for q in task.queries for d in q.qrels}
    corpus = tmp_path / "fiqa.jsonl.zip"
    with zipfile.ZipFile(corpus, "w") as z:
        z.writestr(
            "fiqa.jsonl", "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in passages.items())
        )
    return corpus


def _eval(tmp_path: Path, corpus: Path, *extra: str) -> dict:
    out = tmp_path / "out"
    assert (
        cli_main(
            [
                "eval",
                "--task",
                "mtragun-fiqa",
                "--data-dir",
                str(MTRAGUN),
                "--corpus",
                str(corpus),
                "--model",
                "bm25",
                "--history",
                "current",
                "--quiet",
                "--output-dir",
                str(out),
                *extra,
            ]
        )
        == 0
    )
    files = sorted(out.rglob("mtragun-fiqa.json"))
    return {("official" if "protocol=official" in str(f) else "trec_eval"): json.loads(f.read_text()) for f in files}


@pytest.mark.slow  # two end-to-end evals (BM25 over 158 passages, result files): 40 s on 2 loaded CPU cores
def test_eval_records_the_protocol_and_keeps_results_apart(tmp_path):
    corpus = _stand_in_task(tmp_path)
    _eval(tmp_path, corpus)  # the card's default: official
    docs = _eval(tmp_path, corpus, "--protocol", "trec_eval")
    assert set(docs) == {"official", "trec_eval"}  # two files: neither replaced the other
    official, trec = docs["official"], docs["trec_eval"]
    assert official["mtrbench"]["settings"]["protocol"] == "official:mtrag"
    assert trec["mtrbench"]["settings"]["protocol"] == "trec_eval"
    # Every judged query is in the run, none is its own document and all have a relevant one: here the two
    # protocols differ only by the official rounding. trec_eval's value is pytrec_eval's on the written run.
    run_file = next((tmp_path / "out").rglob("mtragun-fiqa.run.trec"))
    run: dict[str, dict[str, float]] = {}
    for line in run_file.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    task = load_task("mtragun-fiqa", data_dir=MTRAGUN, require_corpus=False)
    per_query = pytrec_eval.RelevanceEvaluator(task.qrels(), {"ndcg_cut.5"}).evaluate(run)
    expected = sum(v["ndcg_cut_5"] for v in per_query.values()) / len(task.qrels())
    trec_scores, official_scores = trec["scores"]["dev"][0], official["scores"]["dev"][0]
    assert trec_scores["ndcg_at_5"] == pytest.approx(expected, abs=1e-12)
    assert official_scores["ndcg_at_5"] == round(expected, 5)
    assert official["mtrbench"]["queries"]["evaluated"] == trec["mtrbench"]["queries"]["evaluated"] == 58


def test_score_official_mtrag_from_the_command_line(tmp_path, capsys):
    (tmp_path / "run.trec").write_text("q1 Q0 q1 1 0.99 r\nq1 Q0 d3 2 0.9 r\nq1 Q0 d1 3 0.8 r\nq2 Q0 d5 1 1.0 r\n")
    (tmp_path / "qrels.trec").write_text("q1 0 d1 1\nq2 0 d5 0\nq3 0 d6 1\n")
    args = [
        "score",
        "--run",
        str(tmp_path / "run.trec"),
        "--qrels",
        str(tmp_path / "qrels.trec"),
        "--metrics",
        "ndcg",
        "--k",
        "3",
        "--output",
        str(tmp_path / "s.json"),
    ]
    assert cli_main([*args, "--protocol", "official:mtrag"]) == 0
    scores = json.loads((tmp_path / "s.json").read_text())
    # q1: d3, d1 after dropping q1 -> 1/log2(3) over an ideal of 1; q2 kept with 0; q3 skipped
    assert scores["protocol"] == "official:mtrag" and scores["queries"]["judged_skipped"] == 1
    assert scores["scores"]["ndcg_at_3"] == round((1 / 1.584962500721156) / 2, 5)
    assert cli_main([*args, "--protocol", "official"]) == 2
    assert "needs a task" in capsys.readouterr().err


def test_python_api_takes_the_protocol_and_checks_it_before_loading(tmp_path):
    import mtrbench
    from mtrbench.infra.errors import UserInputError

    with pytest.raises(UserInputError, match="task 'mtrbench-sample' has no official protocol"):
        mtrbench.evaluate("bm25", "mtrbench-sample", protocol="official", output_dir=tmp_path, show_progress=False)
    assert not any(tmp_path.iterdir())
