"""The typed Result: files written before it existed load unchanged; bad files are one error line naming them;
saving writes back what was read; and the readers that go through it fail the same way."""

from __future__ import annotations

import json
import re
import shutil
import statistics
from pathlib import Path

import pytest

from mtrbench.formats.run import read_run
from mtrbench.infra.errors import DataError, MtrbenchError
from mtrbench.results.result import Result

ROOT = Path(__file__).resolve().parents[2]
# Written by mtrbench 0.1 (before Result): `mtrbench eval --model bm25 --history current --limit 3`, its files
# flattened into one folder; it records no main_score_key.
V01 = Path(__file__).resolve().parents[1] / "data" / "results-v0.1"
V01_JSON = V01 / "mtrbench-sample.json"
NOT_METRICS = {"hf_subset", "languages", "main_score"}


def jsonl_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture()
def v01(tmp_path) -> Path:
    """A writable copy of the 0.1 result and the files beside it."""
    for path in V01.iterdir():
        shutil.copy(path, tmp_path / path.name)
    return tmp_path / V01_JSON.name


def test_result_written_before_result_existed_loads():
    document = json.loads(V01_JSON.read_text(encoding="utf-8"))
    assert "main_score_key" not in document["mtrbench"]  # the fixture is an old file
    result = Result.load(V01_JSON)

    assert result.main_score_key == "ndcg_at_10"  # from the task card, since the file does not say
    block = document["scores"]["test"][0]
    assert result.scores == {k: v for k, v in block.items() if k not in NOT_METRICS}
    assert result.main_score == block["main_score"] == block["ndcg_at_10"]
    assert (result.task_name, result.split, result.history) == ("mtrbench-sample", "test", "current")
    assert (result.model_name, result.requested_model) == ("bm25", "bm25")
    assert result.model_revision == document["mtrbench"]["model"]["revision"]
    assert result.dataset_revision == document["dataset_revision"]
    assert result.n_evaluated == document["mtrbench"]["queries"]["evaluated"] == 20
    assert result.breakdowns["turn"] == document["mtrbench"]["breakdowns"]["turn"]
    assert result.files == document["mtrbench"]["files"]

    rows = jsonl_rows(V01 / "mtrbench-sample.per_query.jsonl")
    assert [q.as_row() for q in result.per_query] == rows
    assert result.per_query_values() == {
        r["qid"]: {k: v for k, v in r.items() if k not in ("qid", "conversation_id", "turn_id")} for r in rows
    }
    # the aggregate is the mean of the per-query values, computed here without Result
    assert abs(statistics.mean(r["ndcg_at_10"] for r in rows) - result.scores["ndcg_at_10"]) < 1e-9

    assert result.run_path == V01 / "mtrbench-sample.run.trec"
    assert result.run() == read_run(V01 / "mtrbench-sample.run.trec")


def test_main_score_key_of_an_unknown_task_is_the_metric_with_mtebs_main_score(v01):
    document = json.loads(v01.read_text())
    document["task_name"] = "no-such-task-card"
    v01.write_text(json.dumps(document))
    assert Result.load(v01).main_score_key == "ndcg_at_10"
    document["scores"]["test"][0]["main_score"] = -1.0  # matches no metric: an error naming the file
    v01.write_text(json.dumps(document))
    with pytest.raises(DataError, match="main_score") as caught:
        Result.load(v01).main_score_key  # noqa: B018
    assert str(v01) in str(caught.value)


def _broken(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.json"
    document = json.loads(V01_JSON.read_text())
    if kind == "leaderboard":
        shutil.copy(ROOT / "leaderboards" / "sample.json", path)
        return path
    if kind == "invalid":
        path.write_text('{"task_name": "mtrbench-sample", "scores": ')
        return path
    if kind == "not-utf8":
        path.write_bytes(b'{"task_name": "\xff"}')
        return path
    if kind == "no-scores":
        del document["scores"]
    elif kind == "empty-scores":
        document["scores"] = {}
    elif kind == "split-not-a-list":
        document["scores"]["test"] = {"ndcg_at_10": 0.5}
    elif kind == "model-missing":
        del document["mtrbench"]["model"]
    path.write_text(json.dumps(document))
    return path


BROKEN = ["leaderboard", "invalid", "not-utf8", "no-scores", "empty-scores", "split-not-a-list", "model-missing"]


@pytest.mark.parametrize("kind", BROKEN)
def test_a_file_that_is_no_complete_result_is_one_error_naming_it(tmp_path, kind):
    path = _broken(tmp_path, kind)
    with pytest.raises(MtrbenchError) as caught:
        Result.load(path)
    message = str(caught.value)
    assert isinstance(caught.value, DataError)
    assert str(path) in message and "\n" not in message


def test_a_missing_file_is_one_error_naming_it(tmp_path):
    with pytest.raises(DataError, match="nope.json"):
        Result.load(tmp_path / "nope.json")


def test_a_per_query_file_missing_or_broken_is_one_error_naming_it(v01):
    per_query = v01.with_name("mtrbench-sample.per_query.jsonl")
    per_query.write_text('{"conversation_id": "c", "turn_id": 1, "ndcg_at_10": 1.0}\n')  # no qid
    with pytest.raises(DataError, match="per_query.jsonl"):
        Result.load(v01).per_query  # noqa: B018
    per_query.unlink()
    with pytest.raises(DataError, match="per-query file .* is missing"):
        Result.load(v01).per_query  # noqa: B018


def test_save_to_a_new_path_writes_back_what_was_read(tmp_path):
    result = Result.load(V01_JSON)
    run = result.run()
    out = tmp_path / "moved" / "mtrbench-sample.json"
    result.save(run, run_tag="bm25-current", path=out)

    assert json.loads(out.read_text()) == json.loads(V01_JSON.read_text())
    assert out.read_text() == V01_JSON.read_text()  # byte for byte: eval's own layout
    assert read_run(out.with_name("mtrbench-sample.run.trec")) == run
    # the per-query rows move with the result (they are read from where it was before it is written elsewhere)
    assert jsonl_rows(out.with_name("mtrbench-sample.per_query.jsonl")) == jsonl_rows(
        V01 / "mtrbench-sample.per_query.jsonl"
    )
    again = Result.load(out)
    assert again.scores == Result.load(V01_JSON).scores and again.per_query == Result.load(V01_JSON).per_query


# -- the readers that go through Result: one error line naming the file, exit status 2 -------------------
@pytest.mark.parametrize("kind", ["invalid", "no-scores", "empty-scores", "model-missing"])
def test_readers_report_a_broken_result_as_one_error_line(tmp_path, capsys, kind):
    from mtrbench.cli import main

    broken = _broken(tmp_path, kind)
    commands = [
        ["compare", str(V01_JSON), str(broken)],
        ["leaderboard", "build", str(broken), "-o", str(tmp_path / "board.json")],
        ["plot", str(broken), "-o", str(tmp_path / "plots")],
    ]
    for argv in commands:
        capsys.readouterr()
        assert main(argv) == 2, argv
        errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and str(broken) in errors[0], (argv, errors)
    assert not (tmp_path / "board.json").exists()


def test_generation_and_fusion_find_the_run_beside_a_result(v01):
    from mtrbench.generation.sources import resolve_run_file
    from mtrbench.retrieve.fusion import run_file_for

    run = v01.with_name("mtrbench-sample.run.trec")
    assert resolve_run_file(v01) == run and run_file_for(v01) == run
    document = json.loads(v01.read_text())
    document["mtrbench"]["files"]["run"] = "../elsewhere.trec"  # a result only names a sibling
    v01.write_text(json.dumps(document))
    for read in (resolve_run_file, run_file_for):
        with pytest.raises(MtrbenchError, match=re.escape(str(v01))):
            read(v01)
    v01.write_text("[]")
    for read in (resolve_run_file, run_file_for):
        with pytest.raises(MtrbenchError, match="not an `mtrbench eval` result"):
            read(v01)


def test_overwrite_decision_reads_settings_through_result(v01):
    from mtrbench.results.overwrite import decide

    settings = Result.load(v01).settings
    assert decide(v01, settings, "only-missing").reason == "finished"
    assert decide(v01, {**settings, "top_k": 5}, "only-missing").reason == "settings differ"
    assert decide(v01, settings, "only-missing", dataset_revision="other").reason == "settings differ"
    v01.write_bytes(b"\xff\xfe")  # not text: unreadable, never a traceback
    assert decide(v01, settings, "only-missing").reason == "unreadable"
