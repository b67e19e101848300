"""The commands on issue 42, section 1 ("official must mean official"), in-process: `score` counts an official
protocol's own threshold with or without a card and refuses a contradicting --relevance-level, `score --task` takes
the card's official protocol as `eval` does, both help texts name every official protocol, `tasks show --stats`
counts relevant passages at the card's level, and `eval` on a partial corpus says so in its table's title.

The qrels and run are tests/measures/test_official_thresholds.py's (grades 0/1/2, values worked by hand there).
"""

from __future__ import annotations

import argparse
import json
import re

import pytest
import yaml

from mtrbench.cli import build_parser
from mtrbench.measures.protocols import official_choices
from tests.cli_run import run_cli
from tests.data.ikat_fixtures import turn_ids
from tests.measures.test_official_thresholds import OFFICIAL_IKAT, QRELS, RUN
from tests.pipeline.test_partial_corpus_official import subset  # noqa: F401 (a fixture)


def _write(folder, qrels, run, qids=None):
    """``qrels`` and ``run`` as TREC files, their turn ids renamed to ``qids`` (real iKAT turns) when given."""
    name = dict(zip(QRELS, qids)) if qids else {q: q for q in QRELS}
    qrels_path, run_path = folder / "2023-qrels.all-turns.txt", folder / "run.trec"
    qrels_path.write_text("".join(f"{name[q]} Q0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    lines = [
        f"{name[q]} Q0 {d} {rank} {score} hand\n"
        for q, docs in run.items()
        for rank, (d, score) in enumerate(docs.items(), 1)
    ]
    run_path.write_text("".join(lines))
    return qrels_path, run_path


def test_score_qrels_official_ikat_counts_grade_2(tmp_path):
    qrels, run = _write(tmp_path, QRELS, RUN)
    out = tmp_path / "scores.json"
    done = run_cli(*_score_args(run, "--qrels", qrels, out), "--protocol", "official:ikat")
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert (report["protocol"], report["relevance_level"]) == ("official:ikat", 2)
    assert report["scores"] == pytest.approx(OFFICIAL_IKAT, abs=1e-12)
    assert report["queries"]["evaluated"] == 4


def _score_args(run, flag, value, out):
    return ("score", "--run", run, flag, value, "--metrics", "MRR@10,P@2,nDCG@2", "--output", out)


def test_score_refuses_a_relevance_level_contradicting_the_protocol(tmp_path):
    qrels, run = _write(tmp_path, QRELS, RUN)
    done = run_cli(
        *_score_args(run, "--qrels", qrels, tmp_path / "s.json"),
        "--protocol",
        "official:ikat",
        "--relevance-level",
        "1",
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "--relevance-level 1" in lines[0] and "grade >= 2" in lines[0]
    assert not (tmp_path / "s.json").exists()
    custom = run_cli(
        *_score_args(run, "--qrels", qrels, tmp_path / "t.json"), "--protocol", "trec_eval", "--relevance-level", "1"
    )
    assert custom.returncode == 0, custom.stderr


def test_score_task_defaults_to_the_cards_official_protocol(tmp_path):
    qrels, run = _write(tmp_path, QRELS, RUN, turn_ids(2023)[:4])
    out = tmp_path / "scores.json"
    done = run_cli(*_score_args(run, "--task", "ikat-2023", out), "--data-dir", tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert (report["protocol"], report["relevance_level"]) == ("official:ikat", 2)
    assert report["scores"] == pytest.approx(OFFICIAL_IKAT, abs=1e-12)


@pytest.mark.parametrize("command,spelled", [("score", "official:{}"), ("eval", "{}")])
def test_protocol_help_names_every_official_protocol(command, spelled):
    """score's --protocol takes official:<benchmark>, eval's official (the card's): both name every registered one."""
    subcommands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    flag = next(a for a in subcommands.choices[command]._actions if "--protocol" in a.option_strings)
    assert len(official_choices()) == 6  # mtrag, bridge, mtr-suite, ikat, ikat-ptkb, trec-cast
    for choice in official_choices():
        name = spelled.format(choice.partition(":")[2])
        assert re.search(rf"(?<![\w:-]){re.escape(name)}(?![\w-])", flag.help), (command, name, flag.help)


def test_tasks_show_stats_counts_relevant_at_the_cards_level(tmp_path):
    _write(tmp_path, QRELS, RUN, turn_ids(2023)[:4])
    done = run_cli("tasks", "show", "ikat-2023", "--data-dir", tmp_path, "--stats")
    assert done.returncode == 0, done.stderr
    stats = yaml.safe_load(done.stdout)["stats"]
    # grade >= 2 per judged turn: t1 1 (a), t2 0, t3 0, t4 1 (h); grade >= 1 would give t1 2, t2 1
    assert stats["relevance_level"] == 2
    assert stats["relevant_per_query"] == {"mean": 1.0, "median": 1.0, "min": 1, "max": 1}


def test_eval_on_a_partial_corpus_says_so_in_the_title(subset, tmp_path):  # noqa: F811
    folder, corpus, _ = subset
    done = run_cli(
        "eval", "--model", "bm25", "--task", "ikat-2023", "--data-dir", folder, "--corpus", corpus,
        "--metrics", "nDCG@5", "--k", "5", "--output-dir", tmp_path, "--quiet",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "partial corpus: 3 of 6 judged passages not in the corpus (scored as judged)" in text
