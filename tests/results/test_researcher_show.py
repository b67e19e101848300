"""`mtrbench.results.show`: a finished result's tables, exactly as `mtrbench eval` printed them."""

from __future__ import annotations

import json

import pytest

from mtrbench.infra.errors import MtrbenchError
from mtrbench.results.show import show
from tests.cli_run import run_cli


@pytest.fixture(scope="module")
def evaluated(native_mini, tmp_path_factory):
    """BM25 on the mini native task (named as its folder, so eval's title names it as the result does), histories
    current and full, and what eval printed."""
    out = tmp_path_factory.mktemp("show")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(native_mini.parent)
        done = run_cli(
            "eval", "--model", "bm25", "--task", native_mini.name, "--history", "current,full", "--output-dir", out
        )
    assert done.returncode == 0, done.stderr
    return out, done


def test_show_prints_finished_results_as_eval_printed_them(evaluated):
    out, done = evaluated
    assert "current " in done.stdout and "full " in done.stdout and "by turn" in done.stdout  # both tables
    assert show(out) == done.stdout


def test_one_result_file_shows_its_own_history_with_its_values(evaluated):
    out, _ = evaluated
    [path] = [p for p in out.rglob("native-mini.json") if "history=current" in str(p)]
    document = json.loads(path.read_text())
    ndcg = document["scores"]["test"][0]["ndcg_at_10"]
    shown = show(path)
    [row] = [line for line in shown.splitlines() if line.startswith("current ")]
    assert row.split()[1] == f"{ndcg:.4f}"
    assert not any(line.startswith("full ") for line in shown.splitlines())
    assert shown.splitlines()[0].startswith(f"{document['task_name']} · bm25 · ")


def test_a_folder_without_a_result_is_one_error(tmp_path):
    (tmp_path / "notes.json").write_text("{}")
    with pytest.raises(MtrbenchError, match=r"no `mtrbench eval` result in it"):
        show(tmp_path)


def test_rerunning_a_finished_eval_prints_its_tables(evaluated, native_mini):
    out, first = evaluated
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(native_mini.parent)
        again = run_cli(
            "eval", "--model", "bm25", "--task", native_mini.name, "--history", "current,full", "--output-dir", out
        )
    assert again.returncode == 0 and "note: skipped" in again.stderr
    assert again.stdout == first.stdout


def test_the_show_command_prints_what_eval_printed(evaluated):
    out, first = evaluated
    shown = run_cli("show", out)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == first.stdout


def test_the_show_command_refuses_a_missing_result_in_one_line(tmp_path):
    done = run_cli("show", tmp_path / "nope.json")
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1 and "nope.json" in done.stderr
