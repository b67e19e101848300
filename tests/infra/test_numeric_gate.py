"""The numeric gate (mtrbench/infra/numeric.py): a number from a file or a user object that is not finite, or off
its documented scale, is one `error:` line naming the file and record (exit 2, no traceback), or the package's
error class naming the object and query in the Python API. One test per family of inputs."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import mtrbench
from mtrbench.cli import main
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import RATING_SCALE, finite, finite_tree, on_scale

DATA = Path(__file__).resolve().parents[1] / "data"
RESULT = DATA / "results-v0.1"
RAD_JUDGMENTS = DATA / "shared/datasets/real/rad-bench/model_judgment_sample.jsonl"


def one_error(capfd: pytest.CaptureFixture[str], code: int, pattern: str) -> None:
    """Exit 2, one `error:` line on stderr matching ``pattern``, no traceback anywhere."""
    captured = capfd.readouterr()
    lines = captured.err.strip().splitlines()
    assert "Traceback" not in captured.out + captured.err
    assert code == 2 and len(lines) == 1, captured.err
    assert lines[0].startswith("error: "), lines[0]
    assert re.search(pattern, lines[0]), lines[0]


def rewrite_jsonl(path: Path, line: int, edit) -> None:
    rows = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if text.strip()]
    edit(rows[line - 1])
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def copied_result(folder: Path) -> Path:
    shutil.copytree(RESULT, folder)
    return folder / "mtrbench-sample.json"


# -- the gate itself ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["nan", "inf", "-Infinity", math.nan, -math.inf, np.float32("nan")])
def test_non_finite_values_are_refused_naming_where(value):
    with pytest.raises(DataError, match=r"^f\.run:3: score .* is not a finite number$"):
        finite(value, "f.run:3", "score")


@pytest.mark.parametrize("value", [True, None, "high", [1.0]])
def test_what_is_not_a_number_is_refused(value):
    with pytest.raises(DataError, match="is not a number"):
        finite(value, "f:1", "score")


def test_ratings_on_their_scale_pass_and_off_it_are_refused():
    assert [on_scale(v, "f:1", "rating", RATING_SCALE) for v in (1, 10, 5.5, -1)] == [1.0, 10.0, 5.5, -1.0]
    for value in (0, 11, 420, -2, 0.5):
        with pytest.raises(DataError, match="off its scale"):
            on_scale(value, "f:1", "rating", RATING_SCALE)


def test_a_json_tree_names_the_path_of_its_first_non_finite_number():
    finite_tree({"a": [1, 2.5, {"b": "nan"}]}, "x.json")  # the string "nan" is text, not a number
    with pytest.raises(DataError, match=r"^x\.json: scores\.test\[0\]\.ndcg is inf, not a finite number$"):
        finite_tree({"scores": {"test": [{"ndcg": math.inf}]}}, "x.json")


# -- files given to commands --------------------------------------------------------------------------------
def test_score_predictions_with_a_nan_context_score(tmp_path, capfd):
    qrels = tmp_path / "qrels"
    qrels.mkdir()
    (qrels / "fiqa.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    rows = [
        {"task_id": "q1", "Collection": "fiqa", "contexts": [{"document_id": "d1", "score": 2.0}]},
        {"task_id": "q2", "Collection": "fiqa", "contexts": [{"document_id": "d2", "score": math.nan}]},
    ]
    path = tmp_path / "taska.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = main(["score", "--predictions", str(path), "--data-dir", str(qrels)])
    one_error(capfd, code, r"taska\.jsonl:2 context 0: 'score' nan is not a finite number")


def test_compare_with_a_nan_per_query_score(tmp_path, capfd):
    a, b = copied_result(tmp_path / "a"), copied_result(tmp_path / "b")
    rewrite_jsonl(b.with_name("mtrbench-sample.per_query.jsonl"), 3, lambda row: row.update(ndcg_at_10=math.nan))
    code = main(["compare", str(a), str(b), "--output", str(tmp_path / "c.json")])
    one_error(capfd, code, r"b/mtrbench-sample\.per_query\.jsonl:3: ndcg_at_10 is nan, not a finite number")
    assert not (tmp_path / "c.json").exists()


def test_compare_with_a_score_output_holding_infinity(tmp_path, capfd):
    a = copied_result(tmp_path / "a")
    scored = tmp_path / "s.json"
    scored.write_text(json.dumps({"run": "x.run", "per_query": {"q1": {"ndcg_cut_10": math.inf}}}))
    code = main(["compare", str(a), str(scored)])
    one_error(capfd, code, r"s\.json: per_query\.q1\.ndcg_cut_10 is inf, not a finite number")


def test_leaderboard_build_with_a_nan_main_score(tmp_path, capfd):
    result = copied_result(tmp_path / "results")
    document = json.loads(result.read_text())
    document["scores"]["test"][0]["main_score"] = math.nan
    result.write_text(json.dumps(document))
    code = main(["leaderboard", "build", str(tmp_path / "results"), "-o", str(tmp_path / "lb.json")])
    one_error(capfd, code, r"mtrbench-sample\.json: scores\.test\[0\]\.main_score is nan, not a finite number")
    assert not (tmp_path / "lb.json").exists()


def test_leaderboard_verify_against_an_expected_nan(tmp_path, capfd, monkeypatch):
    from mtrbench.leaderboard.schema import leaderboards_dir

    monkeypatch.chdir(tmp_path)
    document = json.loads((leaderboards_dir() / "sample.json").read_text())
    document["entries"][1]["scores"]["ndcg_at_10"] = math.nan
    path = tmp_path / "lb.json"
    path.write_text(json.dumps(document))
    code = main(["leaderboard", "verify", str(path)])
    one_error(capfd, code, r"lb\.json: entries\[1\]\.scores\.ndcg_at_10 is nan, not a finite number")


@pytest.mark.parametrize("rating", [math.nan, 420, 0])
def test_judge_rad_bench_refuses_a_rating_off_its_scale(rating, tmp_path, capfd):
    path = tmp_path / "model_judgment.jsonl"
    shutil.copy(RAD_JUDGMENTS, path)
    rewrite_jsonl(path, 4, lambda row: row.update(score=rating))
    code = main(["judge", "rad-bench", "--judgments", str(path), "--output", str(tmp_path / "t.json")])
    expected = "is not a finite number" if rating != rating else r"is off its scale \(a rating from 1 to 10"
    one_error(capfd, code, rf"model_judgment\.jsonl record 3 \(\w+\): 'score' {rating} {expected}")
    assert not (tmp_path / "t.json").exists()


def test_judge_rad_bench_keeps_unparsable_minus_one(tmp_path, capfd):
    path = tmp_path / "model_judgment.jsonl"
    shutil.copy(RAD_JUDGMENTS, path)
    rewrite_jsonl(path, 4, lambda row: row.update(score=-1))
    assert main(["judge", "rad-bench", "--judgments", str(path), "--output", str(tmp_path / "t.json")]) == 0
    assert sum(json.loads(tmp_path.joinpath("t.json").read_text())["tables"][0]["unparsable"].values()) == 1


# -- what user objects return through the Python API --------------------------------------------------------
CORPUS = {"d1": "Paris is the capital of France.", "d2": "Berlin is the capital of Germany.", "d3": "Tokyo."}
CONVERSATIONS = {
    "c1": [
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "And of Germany?"},
    ]
}
QRELS = {"c1_1": {"d1": 1}, "c1_2": {"d2": 1}}


@pytest.fixture()
def task():
    return mtrbench.make_task("gate-python", CORPUS, CONVERSATIONS, QRELS)


@pytest.mark.parametrize("grade", [math.nan, 1.5, "high"])
def test_a_task_built_in_python_refuses_a_grade_that_is_not_a_whole_number(grade):
    qrels = {**QRELS, "c1_2": {"d2": grade}}
    with pytest.raises(mtrbench.UserInputError, match=r"task bad-grades: qrels of c1_2, document d2: grade"):
        mtrbench.make_task("bad-grades", CORPUS, CONVERSATIONS, qrels)


def test_a_search_object_returning_nan_scores(task, tmp_path):
    class NanSearch:
        name = "nan-search"

        def search(self, queries, top_k):
            return {qid: {"d1": 1.0, "d2": math.nan} for qid in queries}

    with pytest.raises(mtrbench.ModelError, match=r"nan-search\.search: query c1_1, document d2: score nan is not"):
        mtrbench.evaluate(NanSearch(), task, output_dir=tmp_path, show_progress=False)


def test_a_search_object_returning_no_mapping_for_a_query(task, tmp_path):
    class ListSearch:
        name = "list-search"

        def search(self, queries, top_k):
            return {qid: ["d1", "d2"] for qid in queries}

    with pytest.raises(mtrbench.ModelError, match=r"list-search\.search: query c1_1: got list"):
        mtrbench.evaluate(ListSearch(), task, output_dir=tmp_path, show_progress=False)


def test_an_encoder_whose_queries_and_documents_differ_in_width(task, tmp_path):
    class Mismatched:
        name = "mismatched"

        def encode_queries(self, queries, **kwargs):
            return np.ones((len(queries), 3), dtype=np.float32)

        def encode_corpus(self, corpus, **kwargs):
            return np.ones((len(corpus), 4), dtype=np.float32)

    with pytest.raises(
        mtrbench.ModelError,
        match=r"mismatched\.encode_queries returned 3-dimensional vectors after 4-dimensional corpus",
    ):
        mtrbench.evaluate(Mismatched(), task, output_dir=tmp_path, show_progress=False)


def test_an_encoder_returning_infinity(task, tmp_path):
    class Infinite:
        name = "infinite"

        def encode_queries(self, queries, **kwargs):
            return np.full((len(queries), 4), np.inf, dtype=np.float32)

        def encode_corpus(self, corpus, **kwargs):
            return np.ones((len(corpus), 4), dtype=np.float32)

    with pytest.raises(mtrbench.ModelError, match=r"infinite\.encode_queries returned NaN or infinite values"):
        mtrbench.evaluate(Infinite(), task, output_dir=tmp_path, show_progress=False)


def test_human_scores_refuse_an_infinity_and_read_an_empty_cell_as_no_score(tmp_path):
    from mtrbench.audit.defaults import DIMENSIONS
    from mtrbench.audit.human import read_human_scores

    path = tmp_path / "human.csv"
    path.write_text(f"instance_id,dimension,score\ni1,{DIMENSIONS[0]},3\ni2,{DIMENSIONS[0]},inf\n")
    with pytest.raises(DataError, match=r"human\.csv line 3: score 'inf' is not a finite number"):
        read_human_scores(path)
    path.write_text(f"instance_id,dimension,score\ni1,{DIMENSIONS[0]},3\ni2,{DIMENSIONS[0]},nan\n")
    assert read_human_scores(path)[DIMENSIONS[0]] == {"i1": 3.0}


@pytest.mark.parametrize(("mode", "bad"), [("rating", 420), ("rating", math.nan), ("verdict", 0.5)])
def test_a_judge_log_value_off_its_scale_is_refused_when_read_back(mode, bad, tmp_path, capfd, monkeypatch):
    from golden_outputs import GENERATIONS, KEY_ENV, LLM_FLAGS, ScriptedModel
    from llm_server import ScriptedChatServer

    monkeypatch.setenv(KEY_ENV, "sk-gate-test")
    out = tmp_path / "judged"
    with ScriptedChatServer(ScriptedModel()) as server:
        judge = {"name": "j", "model": "judge-m", "base_url": server.base_url, "api_key_env": KEY_ENV}
        judges = tmp_path / "judges.json"
        judges.write_text(json.dumps({"judges": [{**judge, "parse_retries": 1, "max_retries": 0}]}))
        argv = ["judge", "run", str(GENERATIONS), "--task", "mtrbench-sample", "--judges", str(judges), *LLM_FLAGS]
        argv += ["--judge", mode, "--output-dir", str(out)]
        assert main(argv) == 0
        capfd.readouterr()
        log = out / "judgments.jsonl"
        records = [json.loads(line) for line in log.read_text().splitlines()]
        answered = next(r for r in records if r.get("ok"))
        answered["value"] = bad
        log.write_text("".join(json.dumps(r) + "\n" for r in records))
        code = main(argv)
    one_error(
        capfd, code, rf"judgments\.jsonl: {re.escape(answered['key'])}: {mode} {bad} is (off its scale|not a finite)"
    )
