"""ResultSettings: every recorded settings block reads and writes back byte for byte; identity leaves out only how a
run went (device, batch size, search mode, the parent-child child count, the rewriter's request counts), so two
results differing only there are the same, while two differing in truncation are not and never rank together."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import mtrbench
from mtrbench.leaderboard.build import build_document, group_entries
from mtrbench.leaderboard.entries import SourcedEntry, result_entry
from mtrbench.leaderboard.keys import identity
from mtrbench.results.overwrite import decide
from mtrbench.results.result import Result
from mtrbench.results.settings import ResultSettings

DATA = Path(__file__).resolve().parents[1] / "data"
# Written by `mtrbench eval` (compare/: one per history, with protocols; results-v0.1: before protocols, --limit 3)
WRITTEN = sorted(DATA.glob("compare/*/mtrbench-sample.json")) + [DATA / "results-v0.1" / "mtrbench-sample.json"]


def recorded(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))["mtrbench"]["settings"]


def dense_block(**changes) -> dict:
    """A dense retriever's settings block in the layout eval writes (keys as recorded by DenseRetriever)."""
    block = copy.deepcopy(recorded(DATA / "compare" / "full" / "mtrbench-sample.json"))
    block["truncate"] = "left"
    block["retriever"] = {
        "kind": "dense",
        "query_prompt": "",
        "doc_prompt": "",
        "max_length": 256,
        "dtype": "fp32",
        "similarity": "cosine",
        "device": "cpu",
        "batch_size": 32,
        "token_budget": None,
        "packed": False,
        "engine_mode": "eager",
        "embedding_cache": "off",
        "search": "exact",
        "search_execution": {"mode": "in-memory"},
    }
    for key, value in changes.items():
        if key in block["retriever"]:
            block["retriever"][key] = value
        else:
            block[key] = value
    return block


def result_document(settings: dict, ndcg: float) -> dict:
    document = json.loads((DATA / "compare" / "full" / "mtrbench-sample.json").read_text(encoding="utf-8"))
    document["mtrbench"]["settings"] = settings
    document["mtrbench"]["model"] = {"name": "org/dense", "revision": "r1", "requested": "org/dense"}
    document["scores"]["test"][0]["ndcg_at_10"] = ndcg
    return document


@pytest.mark.parametrize("path", WRITTEN, ids=lambda p: p.parent.name)
def test_every_written_settings_block_round_trips_byte_for_byte(path):
    block = recorded(path)
    settings = Result.load(path).result_settings
    assert json.dumps(settings.to_json(), indent=2) == json.dumps(block, indent=2)
    assert ResultSettings.from_json(settings.to_json()) == settings


def test_results_written_by_eval_round_trip_and_their_plan_finds_them_finished(native_mini, tmp_path):
    """A fresh eval (a built-in and a Python history): each written block reads back to itself, the Python history's
    identity is its name while its query count is execution, and a second run skips both as finished (the API
    returns the finished results, their files untouched)."""

    def bare_question(conversation):
        return conversation.question

    histories = ["window:2", bare_question]
    results = mtrbench.evaluate("bm25", str(native_mini), history=histories, output_dir=tmp_path, show_progress=False)
    for result in results:
        block = recorded(result.path)
        assert json.dumps(ResultSettings.from_json(block).to_json(), indent=2) == json.dumps(block, indent=2)
    python = results[1].result_settings
    assert python.rewriter == {"kind": "python", "name": results[1].history.removeprefix("python:")}
    assert python.execution() == {"rewriter.queries": results[1].n_evaluated + results[1].n_excluded}
    written = {result.path: result.path.read_bytes() for result in results}
    again = mtrbench.evaluate(
        "bm25", str(native_mini), history=histories, output_dir=tmp_path, overwrite="only-missing", show_progress=False
    )
    assert [r.path for r in again] == list(written)
    assert all(path.read_bytes() == text for path, text in written.items())


def test_results_differing_only_in_how_they_ran_are_the_same(tmp_path):
    first = ResultSettings.from_json(dense_block())
    rerun = ResultSettings.from_json(
        dense_block(
            device="cuda:0", batch_size=128, packed=True, engine_mode="fused", search_execution={"mode": "streaming"}
        )
    )
    assert first.same_result(rerun)
    assert rerun.execution() == {
        "retriever.device": "cuda:0",
        "retriever.batch_size": 128,
        "retriever.token_budget": None,
        "retriever.packed": True,
        "retriever.engine_mode": "fused",
        "retriever.embedding_cache": "off",
        "retriever.search_execution": {"mode": "streaming"},
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(result_document(first.to_json(), 0.5)))
    assert decide(path, rerun, "only-missing").reason == "finished"
    # on a leaderboard: one identity, so the same scores twice are one entry
    a = result_entry(tmp_path / "a.json", result_document(first.to_json(), 0.5))
    b = result_entry(tmp_path / "b.json", result_document(rerun.to_json(), 0.5))
    assert identity(a) == identity(b)
    document = build_document([SourcedEntry(a, "a.json"), SourcedEntry(b, "b.json")], name="x", description="")
    assert len(document["entries"]) == 1


def test_results_differing_in_truncation_are_not_the_same_and_never_rank_together(tmp_path):
    left = ResultSettings.from_json(dense_block(truncate="left"))
    right = ResultSettings.from_json(dense_block(truncate="right"))
    assert not left.same_result(right)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(result_document(left.to_json(), 0.5)))
    assert decide(path, right, "only-missing").reason == "settings differ"
    a = result_entry(tmp_path / "a.json", result_document(left.to_json(), 0.5))
    b = result_entry(tmp_path / "b.json", result_document(right.to_json(), 0.6))
    assert identity(a) != identity(b)
    document = build_document([SourcedEntry(a, "a.json"), SourcedEntry(b, "b.json")], name="x", description="")
    left_id, right_id = (e["id"] for e in document["entries"])
    assert len(document["groups"]) == 2
    assert not any({left_id, right_id} <= set(g["entries"]) for g in document["groups"])
    assert any("truncation differs (left vs right)" in s for s in document["separations"])
    groups, _ = group_entries(document["entries"])  # the same from the written file's entries
    assert [g["entries"] for g in groups] == [[left_id], [right_id]]


def test_a_rewriter_is_identity_and_its_request_counts_are_not():
    written = dense_block(history="rewrite:llm")
    written["rewriter"] = {
        "kind": "rewrite",
        "model": "rw-model",
        "base_url": "http://127.0.0.1:9/v1",
        "prompt_hash": "abc123",
        "queries": 5,
        "requested": 4,
        "cached": 0,
        "failures": 1,
    }
    settings = ResultSettings.from_json(written)
    assert json.dumps(settings.to_json()) == json.dumps(written)
    assert settings.rewriter_failures == 1
    cached = copy.deepcopy(written)
    cached["rewriter"].update(cached=4, failures=0)
    assert settings.same_result(ResultSettings.from_json(cached))
    other = copy.deepcopy(written)
    other["rewriter"]["model"] = "rw-other"
    assert not settings.same_result(ResultSettings.from_json(other))
    # planned (identity only), then completed by the run's report: as eval writes it
    planned = ResultSettings.from_json({k: v for k, v in written.items() if k != "rewriter"})
    planned = planned.after_run(planned.retriever or {}, {})
    assert planned.rewriter is None and "rewriter" not in planned.to_json()  # no rewriter: a report is not recorded


def test_a_result_recorded_before_protocols_is_a_trec_eval_result():
    old = recorded(DATA / "results-v0.1" / "mtrbench-sample.json")
    assert "protocol" not in old
    settings = ResultSettings.from_json(old)
    assert settings.protocol is None and settings.scoring_protocol == "trec_eval"
    assert settings.same_result(ResultSettings.from_json({**old, "protocol": "trec_eval"}))
    assert not settings.same_result(ResultSettings.from_json({**old, "protocol": "official:mtrag"}))


def test_the_experiment_name_names_what_differs_from_the_defaults():
    default = ResultSettings.from_json(dense_block())
    assert default.experiment_name(truncate="left", truncation_applies=True, max_length=None) is None
    assert (
        default.experiment_name(truncate="right", truncation_applies=True, max_length=128)
        == "truncate=right__maxlen=128"
    )
    # no tokenizer (BM25): no truncation part
    assert default.experiment_name(truncate="right", truncation_applies=False, max_length=None) is None
    block = dense_block(history="rewrite:llm", dtype="bf16", protocol="official:mtrag", limit={"conversations": 5})
    block["rewriter"] = {"kind": "rewrite", "model": "rw", "base_url": "u", "prompt_hash": "h", "temperature": 0.7}
    named = ResultSettings.from_json(block)
    assert (
        named.experiment_name(truncate="left", truncation_applies=True, max_length=None)
        == "history=rewrite-llm__dtype=bf16__rewriter=rw@t0.7__protocol=official__limit=5"
    )
