"""MTRAGEval Task B end to end: `generate --oracle --mtrag-out` on the first four MTRAG-UN cloud tasks (the real
released file, tests/data/mtragun) against a scripted generator on 127.0.0.1, then `judge mtrag` on the file.

The scripted generator answers each turn with that task's reference answer (read from the released file by the
test), so the official algorithmic metrics are known without the code under test: RougeL_stemFalse and Recall
of an answer against itself are 1.0, Length (characters, as ``run_algorithmic.py``) its length. The second of
the four tasks is UNANSWERABLE with no reference passage: Task B still asks it (with no passages), and its
record has empty contexts. The corpus is a stand-in made of the reference passages of the cloud tasks (the real
corpus is a Git LFS file, not in tests/data).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main
from mtrbench.formats.mtrag_eval import check_predictions

DATA = Path(__file__).resolve().parents[1] / "data" / "mtragun"
REFERENCE = DATA / "mtragun-human" / "generation_tasks" / "reference.jsonl.gz"
TASKS = 4


@pytest.fixture(scope="module")
def cloud_tasks() -> list[dict]:
    rows = [json.loads(line) for line in gzip.open(REFERENCE, "rt", encoding="utf-8") if line.strip()]
    return [r for r in rows if r["Collection"] == "ibmcloud"]


@pytest.fixture()
def corpus(cloud_tasks, tmp_path) -> Path:
    passages = {c["document_id"]: c for r in cloud_tasks for c in r["contexts"]}
    path = tmp_path / "cloud.jsonl"
    path.write_text(
        "".join(
            json.dumps({"_id": d, "title": c.get("title") or "", "text": c["text"]}) + "\n" for d, c in passages.items()
        )
    )
    return path


def _answerer(cloud_tasks):
    by_question = {r["input"][-1]["text"].strip(): r["targets"][0]["text"] for r in cloud_tasks}

    def answer(body: dict) -> Reply:
        prompt = body["messages"][-1]["content"]
        question = prompt.rsplit("Current question: ", 1)[1].strip()
        return Reply(by_question[question])

    return answer


def _generate(server, corpus: Path, out: Path, predictions: Path, *extra: str) -> int:
    return main(
        [
            "generate",
            "--task",
            "mtragun-cloud",
            "--data-dir",
            str(DATA),
            "--corpus",
            str(corpus),
            "--oracle",
            "--limit",
            str(TASKS),
            "--model",
            "gen",
            "--base-url",
            server.base_url,
            "--output",
            str(out),
            "--mtrag-out",
            str(predictions),
            "--yes",
            "--no-llm-cache",
            "--quiet",
            *extra,
        ]
    )


def test_task_b_predictions_pass_the_format_check_and_score(cloud_tasks, corpus, tmp_path):
    expected = cloud_tasks[:TASKS]
    out, predictions = tmp_path / "gen.generations.jsonl", tmp_path / "taskb.jsonl"
    with ScriptedChatServer(_answerer(cloud_tasks)) as server:
        assert _generate(server, corpus, out, predictions) == 0
        assert len(server.requests) == TASKS  # the unanswerable task is asked too
        # the unanswerable task's prompt shows no passage; an answerable one shows its reference passages
        prompts = {
            r["messages"][-1]["content"].rsplit("Current question: ", 1)[1].strip(): r["messages"][-1]["content"]
            for r in server.requests
        }
        assert "Passages:\n(none)" in prompts[expected[1]["input"][-1]["text"].strip()]
        assert expected[2]["contexts"][1]["text"].strip()[:60] in prompts[expected[2]["input"][-1]["text"].strip()]

        report = check_predictions(predictions, "generation_taskb")
        assert report.problems == []
        rows = [json.loads(line) for line in predictions.read_text().splitlines()]
        assert [r["task_id"] for r in rows] == [t["task_id"] for t in expected]
        for row, task in zip(rows, expected):
            assert row["predictions"] == [{"text": task["targets"][0]["text"]}]
            assert [c["document_id"] for c in row["contexts"]] == [c["document_id"] for c in task["contexts"]]
            assert [m["text"] for m in row["input"]] == [m["text"].strip() for m in task["input"]]
            assert [m["speaker"] for m in row["input"]] == [m["speaker"] for m in task["input"]]
            assert row["answerability"] == task["answerability"]
            assert row["Collection"] == "mt-rag-ibmcloud-elser-512-100-20240502"
        assert rows[1]["contexts"] == [] and report.warnings  # the official checker warns on empty contexts

        # a kill after two answers: the rerun asks only the two missing turns, and the file is whole again
        lines = out.read_text().splitlines(keepends=True)
        out.write_text("".join(lines[:2]))
        predictions.unlink()
        before = len(server.requests)
        assert _generate(server, corpus, out, predictions) == 0
        assert len(server.requests) - before == TASKS - 2
        assert [json.loads(line)["task_id"] for line in predictions.read_text().splitlines()] == [
            t["task_id"] for t in expected
        ]

    metrics_dir = tmp_path / "metrics"
    assert (
        main(
            [
                "judge",
                "mtrag",
                str(predictions),
                "--output-dir",
                str(metrics_dir),
                "--metrics",
                "Recall,RougeL_stemFalse,Length",
                "--quiet",
            ]
        )
        == 0
    )
    scored = {
        r["task_id"]: r["metrics"]
        for r in (json.loads(line) for line in (metrics_dir / "metrics.jsonl").read_text().splitlines())
    }
    assert list(scored) == [t["task_id"] for t in expected]
    for task in expected:
        values = scored[task["task_id"]]
        assert values["RougeL_stemFalse"] == [pytest.approx(1.0)]
        assert values["Recall"] == [pytest.approx(1.0)]
        assert values["Length"] == [len(task["targets"][0]["text"])]  # the official Length counts characters
    assert (metrics_dir / "summary.json").is_file()


@pytest.mark.parametrize(
    "name, extra, message", [("taskb.json", [], "*.jsonl"), ("taskb.jsonl", ["--top-k", "11"], "at most 10 contexts")]
)
def test_mtrag_out_misuse_is_refused_before_any_request(cloud_tasks, corpus, tmp_path, capsys, name, extra, message):
    with ScriptedChatServer(_answerer(cloud_tasks)) as server:
        code = _generate(server, corpus, tmp_path / "g.generations.jsonl", tmp_path / name, *extra)
        assert server.requests == []
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and message in err[0]
