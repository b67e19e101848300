"""No NaN or infinity is written: the one JSON writer of outputs refuses them naming the file and the JSON path,
formats exactly as json.dumps with the same arguments, and a command whose numbers go wrong prints one error line,
exits 2 and leaves no file behind."""

from __future__ import annotations

import json
import math

import pytest

from mtrbench.cli import main
from mtrbench.formats.qrels import format_qrels
from mtrbench.formats.run import format_run
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import json_lines, json_text
from mtrbench.results.scored_run import ScoredRun

DOCUMENT = {"b": [1, 2.5, {"é": None}], "a": "x"}


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"indent": 2},
        {"indent": 2, "ensure_ascii": False},
        {"indent": 1, "sort_keys": True},
        {"ensure_ascii": False, "separators": (",", ":")},
    ],
)
def test_finite_documents_are_written_as_json_dumps_writes_them(options):
    assert json_text(DOCUMENT, path="out.json", **options) == json.dumps(DOCUMENT, **options)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_value_is_refused_naming_the_file_and_its_json_path(bad):
    document = {"scores": {"test": [{"ndcg_at_10": 0.5}, {"ndcg_at_10": bad}]}}
    with pytest.raises(DataError) as caught:
        json_text(document, path="results/run.json", indent=2)
    message = str(caught.value)
    assert message.startswith("results/run.json: ")
    assert "scores.test[1].ndcg_at_10" in message
    assert str(bad) in message


def test_a_tuple_is_searched_like_a_list():
    with pytest.raises(DataError, match=r"pair\[1\]"):
        json_text({"pair": (1.0, math.nan)}, path="x.json")


def test_jsonl_lines_are_json_dumps_lines_and_a_refusal_names_the_line():
    rows = [{"qid": "q1", "ndcg": 0.25}, {"qid": "q2", "ndcg": 1.0}]
    assert json_lines(rows, path="p.jsonl") == "".join(json.dumps(r) + "\n" for r in rows)
    with pytest.raises(DataError, match=r"^p\.jsonl:2: .*ndcg is nan"):
        json_lines([rows[0], {"qid": "q2", "ndcg": math.nan}], path="p.jsonl")


def test_score_output_with_a_nan_is_one_error_line_exit_2_and_no_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "q.qrels").write_text(format_qrels({"q1": {"a": 1}, "q2": {"c": 1}}))
    (tmp_path / "run.trec").write_text(format_run({"q1": {"a": 0.9, "b": 0.8}, "q2": {"b": 0.9, "c": 0.8}}, "t"))
    output = tmp_path / "scores.json"

    def report_gone_wrong(self, scores, analyses):
        return {"run": self.run_path, "scores": {**scores, "ndcg_cut_10": math.nan}}

    monkeypatch.setattr(ScoredRun, "report", report_gone_wrong)
    argv = ["score", "--run", str(tmp_path / "run.trec"), "--qrels", str(tmp_path / "q.qrels")]
    assert main([*argv, "--output", str(output)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1
    assert errors[0].startswith("error: ") and str(output) in errors[0] and "scores.ndcg_cut_10 is nan" in errors[0]
    assert not output.exists()
    assert not list(tmp_path.glob(".scores.json.*"))  # no temporary file left either
