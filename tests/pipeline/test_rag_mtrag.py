"""MTRAGEval Task C through `mtrbench rag --mtrag-out`: BM25 over a stand-in MTRAG-UN cloud corpus (the reference
passages of its tasks; the real corpus is a Git LFS file), generation by a scripted server on 127.0.0.1.

The prediction file must pass MTRAG's rag_taskc check, and each record's contexts must be the top passages of the
run file rag wrote (read here as plain TREC lines: score descending, then document id descending, trec_eval's
order) with the run's scores, the generator's answer as the prediction. With H-RAG's parent-child retrieval
(``--chunking sentences:3:2``) the run and the contexts hold parents (corpus passages, their whole text), never
the sentence-window children (``<parent>#<n>``).

Marked slow: the retrieval stage (torch import, a BM25 index, eval) makes it ~8 s alone on 2 busy cores; the
prediction file itself is covered fast by tests/generation/test_mtrag_predictions.py (Task B).
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main
from mtrbench.formats.mtrag_eval import check_predictions

DATA = Path(__file__).resolve().parents[1] / "data" / "mtragun"
REFERENCE = DATA / "mtragun-human" / "generation_tasks" / "reference.jsonl.gz"
TASKS, PASSAGES = 3, 2


def _answer(body: dict) -> Reply:
    question = body["messages"][-1]["content"].rsplit("Current question: ", 1)[1].strip()
    return Reply(f"Answer to: {question} [1]")


@pytest.mark.slow
@pytest.mark.parametrize(
    "retrieval", [[], ["--chunking", "sentences:3:2", "--candidate-k", "50"]], ids=["passages", "parent-child"]
)
def test_task_c_predictions_hold_the_passages_shown(tmp_path, retrieval):
    rows = [json.loads(line) for line in gzip.open(REFERENCE, "rt", encoding="utf-8") if line.strip()]
    cloud = [r for r in rows if r["Collection"] == "ibmcloud"]
    passages = {c["document_id"]: c["text"] for r in cloud for c in r["contexts"]}
    corpus = tmp_path / "cloud.jsonl"
    corpus.write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in passages.items()))
    predictions, out = tmp_path / "taskc.jsonl", tmp_path / "out"
    with ScriptedChatServer(_answer) as server:
        code = main(
            [
                "rag",
                "--model",
                "bm25",
                "--task",
                "mtragun-cloud",
                "--data-dir",
                str(DATA),
                "--corpus",
                str(corpus),
                "--output-dir",
                str(out),
                "--generator-model",
                "gen",
                "--generator-base-url",
                server.base_url,
                "--judge",
                "none",
                "--measures",
                "TokenF1",
                "--limit",
                str(TASKS),
                "--passages",
                str(PASSAGES),
                "--mtrag-out",
                str(predictions),
                "--yes",
                "--quiet",
                "--no-llm-cache",
                *retrieval,
            ]
        )
        assert code == 0
        assert len(server.requests) == TASKS
    assert check_predictions(predictions, "rag_taskc").problems == []

    run: dict[str, list[tuple[float, str]]] = defaultdict(list)
    (run_file,) = out.rglob("*.run.trec")
    for line in run_file.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run[qid].append((float(score), doc))
    written = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert [r["task_id"] for r in written] == [t["task_id"] for t in cloud[:TASKS]]
    for record, task in zip(written, cloud):
        top = sorted(run[record["task_id"]], reverse=True)[:PASSAGES]
        assert [(c["score"], c["document_id"]) for c in record["contexts"]] == top
        assert [c["text"] for c in record["contexts"]] == [passages[d] for _, d in top]  # parents, whole
        assert record["predictions"] == [{"text": f"Answer to: {task['input'][-1]['text'].strip()} [1]"}]
        assert record["Collection"] == "mt-rag-ibmcloud-elser-512-100-20240502"
        assert record["targets"][0]["text"] == task["targets"][0]["text"]
