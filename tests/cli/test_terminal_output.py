"""Terminal output: 80 columns by design, status on stderr, tables on stdout, run tags naming model and strategy."""

from __future__ import annotations

import json

import pytest

from mtrbench.cli import main
from mtrbench.retrieve.registry import REGISTRY


def _lines(text: str) -> list[str]:
    return text.splitlines()


@pytest.fixture
def columns_80(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.fixture(scope="module")
def bm25_eval(tmp_path_factory):
    """`mtrbench eval --model bm25` on the sample, both histories, stdout and stderr kept apart."""
    import os
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("bm25")
    proc = subprocess.run([sys.executable, "-m", "mtrbench.cli", "eval", "--model", "bm25", "--history",
                           "current,full", "--output-dir", str(folder)], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "80"}, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return folder, proc.stdout, proc.stderr


@pytest.mark.slow
def test_eval_prints_only_tables_on_stdout_and_status_on_stderr(bm25_eval):
    folder, out, err = bm25_eval
    assert all(len(line) <= 80 for line in _lines(out)), max(map(len, _lines(out)))
    assert "Loading model bm25" in err and "Searching" in err and "Done in" in err
    assert not any(word in out for word in ("Loading", "Searching", "Done in", "results:"))
    documents = sorted(folder.rglob("mtrbench-sample.json"))
    assert len(documents) == 2
    for path in documents:
        assert str(path.relative_to(folder)) in err  # where each result went: stderr
        document = json.loads(path.read_text())
        history = document["mtrbench"]["settings"]["history"]
        row = next(line for line in _lines(out) if line.split() and line.split()[0] == history)
        # the strategies table shows each strategy's nDCG@10 as the result file records it
        assert f"{document['scores']['test'][0]['ndcg_at_10']:.4f}" in row.split()


@pytest.mark.slow
def test_run_tags_name_model_and_strategy(bm25_eval):
    folder, _, _ = bm25_eval
    runs = sorted(folder.rglob("*.run.trec"))
    assert len(runs) == 2
    tags = set()
    for run in runs:
        history = json.loads(run.with_name("mtrbench-sample.json").read_text())["mtrbench"]["settings"]["history"]
        for line in run.read_text().splitlines():
            fields = line.split()
            assert len(fields) == 6  # the tag is one whitespace-free token
            assert fields[5] == f"mtrbench-bm25-{history}"
            tags.add(fields[5])
    assert tags == {"mtrbench-bm25-current", "mtrbench-bm25-full"}


@pytest.mark.parametrize("model, strategy, tag", [
    ("minilm", "full", "mtrbench-minilm-full"),
    ("BAAI/bge-base-en-v1.5", "window:3", "mtrbench-bge-base-en-v1.5-window:3"),
    ("/models/my model/", "current", "mtrbench-my_model-current"),
])
def test_run_tag_is_one_token(model, strategy, tag):
    from mtrbench.formats.run import format_run, run_tag

    assert run_tag(model, strategy) == tag
    assert len(format_run({"q": {"d": 1.0}}, run_tag(model, strategy)).split()) == 6


def test_models_shows_every_checkpoint_id_whole_within_80_columns(columns_80, capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    lines = _lines(out)
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    for spec in REGISTRY.values():
        for checkpoint in (spec.model_id, spec.doc_model_id):
            if checkpoint:  # verbatim on one line, never cut or folded
                assert any(checkpoint in line.split() for line in lines), checkpoint
    assert "passage: " in out and "bge-large" in out


def test_leaderboard_show_fits_80_columns(columns_80, capsys):
    assert main(["leaderboard", "show", "sample"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in _lines(out)), max(map(len, _lines(out)))
    model_rows = [line for line in _lines(out) if "all-MiniLM-L6-v2" in line and not line.startswith("- ")]
    assert len(model_rows) == 2 and all("(1)" in line for line in model_rows)  # the name whole on its row


def test_score_title_wraps_within_80_columns(columns_80, tmp_path, capsys):
    from mtrbench.formats.qrels import format_qrels
    from mtrbench.formats.run import format_run

    deep = tmp_path / ("a-rather-long-folder-name-" * 3) / "runs"
    deep.mkdir(parents=True)
    (deep / "run.trec").write_text(format_run({"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0, "d": 0.5}}, "t"))
    (deep / "q.qrels").write_text(format_qrels({"q1": {"b": 1}, "q2": {"c": 1}}))
    assert main(["score", "--run", str(deep / "run.trec"), "--qrels", str(deep / "q.qrels"), "--k", "1,2",
                 "--metrics", "recall"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in _lines(out)), max(map(len, _lines(out)))
    recall_1 = next(line for line in _lines(out) if line.split()[:1] == ["Recall@1"])
    assert recall_1.split()[-1] == "0.5000"  # q1 misses at 1, q2 hits: (0 + 1) / 2


@pytest.mark.parametrize("command", [["tasks"], ["metrics"]])
def test_listings_fit_80_columns(command, columns_80, capsys):
    assert main(command) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in _lines(out)), [line for line in _lines(out) if len(line) > 80]
    if command == ["metrics"]:
        from mtrbench.measures import all_families

        for family in all_families().values():  # each family's key on one line, whole
            key = family.key(family.example(), 1)  # nDCG@10 -> ndcg_at_10; BLEU-1 (no cutoff) -> bleu_1
            assert any(f"key {key}" in line for line in _lines(out)), family.name


def test_verify_fits_80_columns_with_entry_ids_whole(columns_80, tmp_path, monkeypatch, capsys):
    from mtrbench.leaderboard.schema import leaderboards_dir

    # verify compares with an entry's result_file (e.g. results/...) relative to the working directory first:
    # an empty one, so a `mtrbench eval` run in the checkout (its ./results) cannot turn REFUSED into OK.
    monkeypatch.chdir(tmp_path)

    document = json.loads((leaderboards_dir() / "sample.json").read_text())
    for entry in document["entries"]:
        entry["command"] = "rm -rf /tmp/never"  # refused without running anything
    path = tmp_path / ("a-long-folder-name-for-the-leaderboard-" * 2) / "lb.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(document))
    assert main(["leaderboard", "verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in _lines(out)), [line for line in _lines(out) if len(line) > 80]
    for entry in document["entries"]:
        row = next(line for line in _lines(out) if line.split()[:1] == [entry["id"]])
        assert "REFUSED" in row
        assert any(line.startswith(f"{entry['id']}: refused: ") for line in _lines(out))
