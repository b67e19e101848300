"""UMBRELA's filled qrels keep every judged query (one the judge labels nothing for, too), a pair the task judged 0
is never asked again, and a changed judge model asks every pair again (its log is not reused).

The task is native-mini with one more judgment, c1_1's orrin-design graded 0; the run and every expected line
are spelled out here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from llm_server import Reply, ScriptedChatServer

from mtrbench.assess.umbrela import UmbrelaOptions, run_umbrela
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig

# c1_1: varn-depth (judged 2), orrin-design (judged 0) and varn-fish (unjudged: the only pair to label);
# c1_2: varn-fish (judged 2) only; c1_3 and c1_4 are not in the run: judged, but nothing new for them.
RUN = {"c1_1": ["varn-depth", "orrin-design", "varn-fish"], "c1_2": ["varn-fish"]}
EXPECTED_QRELS = [
    "c1_1 0 varn-depth 2",
    "c1_1 0 orrin-design 0",
    "c1_1 0 varn-fish 1",
    "c1_2 0 varn-fish 2",
    "c1_3 0 orrin-design 2",
    "c1_4 0 orrin-open 2",
    "c1_4 0 orrin-design 1",
]


def _task(native_mini: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "task"
    shutil.copytree(native_mini, folder)
    conversations = folder / "conversations" / "test.jsonl"
    conversation = json.loads(conversations.read_text())
    conversation["messages"][0]["qrels"].append({"doc_id": "orrin-design", "score": 0})
    conversations.write_text(json.dumps(conversation) + "\n")
    return folder


def _run_file(tmp_path: Path) -> str:
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{q} Q0 {d} {r} {10 - r} r\n" for q, docs in RUN.items() for r, d in enumerate(docs, 1)))
    return str(path)


def _label(task: Path, run: str, out: Path, base_url: str, model: str = "judge-m", cache: ResponseCache | None = None):
    options = UmbrelaOptions(str(task), (run,), depth=3, output_dir=str(out), yes=True, quiet=True)
    return run_umbrela(options, JudgeConfig(name=model, model=model, base_url=base_url, max_retries=0), cache)


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


def test_judged_queries_and_zero_judgments_are_kept_and_never_asked(native_mini, tmp_path):
    task, run, out = _task(native_mini, tmp_path), _run_file(tmp_path), tmp_path / "out"
    with ScriptedChatServer(lambda body: Reply("##final score: 1")) as server:
        result = _label(task, run, out, server.base_url)
        assert server.request_count == 1  # (c1_1, varn-fish) alone: orrin-design was judged 0
        asked = server.requests[0]["messages"][-1]["content"]
    assert "Lake Varnholm" in asked and "lives only in Lake Varnholm" in asked
    assert result.filled == {("c1_1", "varn-fish"): 1}
    assert result.pool["already_judged"] == 3 and result.pool["to_assess"] == 1
    assert _lines(out / "umbrela_qrels.trec") == EXPECTED_QRELS


def test_a_changed_judge_model_asks_every_pair_again(native_mini, tmp_path):
    """Neither the log nor the response cache answers for another model."""
    task, run, out = _task(native_mini, tmp_path), _run_file(tmp_path), tmp_path / "out"
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with ScriptedChatServer(lambda body: Reply("##final score: 1")) as server:
        _label(task, run, out, server.base_url, cache=cache)
    with ScriptedChatServer(lambda body: Reply("##final score: 3")) as server:
        again = _label(task, run, out, server.base_url, cache=cache)  # the same model: the log answers
        assert server.request_count == 0 and again.filled == {("c1_1", "varn-fish"): 1}
        other = _label(task, run, out, server.base_url, model="judge-n", cache=cache)
        assert server.request_count == 1 and other.asked_now == 1
        assert server.requests[0]["model"] == "judge-n"
    assert other.filled == {("c1_1", "varn-fish"): 3}
    assert "c1_1 0 varn-fish 3" in _lines(out / "umbrela_qrels.trec")
    sidecar = json.loads((out / "umbrela_qrels.trec.llm.json").read_text())
    assert sidecar["judge"]["model"] == "judge-n"
