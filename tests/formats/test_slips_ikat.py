"""iKAT run files: a passage listed by two responses keeps its first score (docs/ikat.md), `--ikat-out` marks the
top 3 passages as used, and personal statements are scored best first (the first listed highest), written and read
back. Expected values are spelled out by hand."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.data import load_task
from mtrbench.data.cards import builtin_cards
from mtrbench.formats.ikat_run import TurnOutput, ikat_document, read_ikat_run
from mtrbench.results.ikat_out import write_ikat_out
from tests.data.ikat_fixtures import turn_ids, write_qrels

A, B, C, D, E = (f"clueweb22-en0001-02-0000{i}:1" for i in range(5))


def test_a_passage_in_two_responses_keeps_its_first_score(tmp_path):
    run = {
        "run_name": "r",
        "run_type": "automatic",
        "turns": [
            {
                "turn_id": "1-1_1",
                "responses": [
                    {"rank": 1, "text": "x", "passage_provenance": [{"id": A, "score": 3.0}, {"id": B, "score": 2.0}]},
                    {"rank": 2, "text": "y", "passage_provenance": [{"id": B, "score": 9.0}, {"id": C, "score": 1.0}]},
                ],
            }
        ],
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    ranking = read_ikat_run(path).passage_run()["1-1_1"]
    assert ranking == {A: 3.0, B: 2.0, C: 1.0}  # C, only in the second response, is ranked too
    assert sorted(ranking, key=lambda d: -ranking[d]) == [A, B, C]


def _used(response: dict[str, Any]) -> list[bool]:
    return [p["used"] for p in response["passage_provenance"]]


def test_written_responses_mark_the_top_3_as_used(tmp_path):
    ranked = [(A, 5.0), (B, 4.0), (C, 3.0), (D, 2.0), (E, 1.0)]
    for year in (2023, 2024):
        document = json.loads(ikat_document([TurnOutput("1-1_1", ranked)], year, "r", "automatic", {}))
        assert _used(document["turns"][0]["responses"][0]) == [True, True, True, False, False], year
        shown = json.loads(ikat_document([TurnOutput("1-1_1", ranked, used=(D,))], year, "r", "automatic", {}))
        assert _used(shown["turns"][0]["responses"][0]) == [False, False, False, True, False], year
    line = json.loads(ikat_document([TurnOutput("1-1_1", ranked)], 2025, "r", "automatic", {}))
    assert line["responses"][0]["citations"] == {A: 5.0, B: 4.0, C: 3.0}


def test_statements_read_from_ids_score_the_first_highest(tmp_path):
    """2024's ptkb_provenance holds ids alone: descending by position."""
    turn = TurnOutput("1-1_1", [(A, 1.0)], "x", [("3", "", 0.5), ("1", "", 0.2), ("2", "", 0.1)])
    path = tmp_path / "run.json"
    path.write_text(ikat_document([turn], 2024, "r", "automatic", {}))
    assert json.loads(path.read_text())["turns"][0]["responses"][0]["ptkb_provenance"] == [3, 1, 2]
    assert read_ikat_run(path).ptkb_run() == {"1-1_1": {"3": 3.0, "1": 2.0, "2": 1.0}}


@dataclass
class _Result:
    """What write_ikat_out reads of a result."""

    ranking: dict[str, dict[str, float]]
    settings: dict[str, Any] = field(default_factory=dict)
    model_name: str = "bm25"
    history: str | None = "full"

    def run(self) -> dict[str, dict[str, float]]:
        return self.ranking


def test_ikat_out_marks_the_top_3_used_and_scores_statements_best_first(tmp_path: Path):
    data = tmp_path / "data"
    data.mkdir()
    write_qrels(data / "2023-qrels.all-turns.txt", turn_ids(2023)[:4])
    task = load_task("ikat-2023", data_dir=data, require_corpus=False)
    first = task.queries[0]
    result = _Result({first.qid: {B: 4.0, A: 5.0, D: 2.0, C: 3.0, E: 1.0}}, {"ptkb": "all"})
    path = tmp_path / "run.json"
    write_ikat_out(path, result, builtin_cards()["ikat-2023"], task)  # type: ignore[arg-type]
    turn = json.loads(path.read_text())["turns"][0]
    assert turn["turn_id"] == first.qid
    response = turn["responses"][0]
    assert [p["id"] for p in response["passage_provenance"]] == [A, B, C, D, E]
    assert _used(response) == [True, True, True, False, False]
    statements = list(first.meta["ptkb"])  # --ptkb all: every statement, in the topic's order
    n = len(statements)
    assert n > 2
    assert [(s["id"], s["score"]) for s in response["ptkb_provenance"]] == [
        (sid, float(n - i)) for i, sid in enumerate(statements)
    ]
    assert read_ikat_run(path).ptkb_run()[first.qid] == {sid: float(n - i) for i, sid in enumerate(statements)}
