"""`mtrbench judge rad-bench --judgments`: RAD-Bench Table 2 from released judgment files, checked against
means computed here in plain Python over the JSON lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run_cli

from mtrbench.cli import main
from mtrbench.infra.errors import MtrbenchError
from mtrbench.judge.table import Rated, rad_bench_tables, scenario_table, turn_means


def hand_table(lines: list[dict], drop_unparsable: bool = False) -> dict[str, dict[str, float]]:
    """Per model and category: mean over turns of the per-turn mean; average = mean of the categories."""
    out = {}
    for model in sorted({r["model"] for r in lines}):
        scores = {}
        for category in ["academic", "news", "education", "finance", "customer", "travel"]:
            per_turn = []
            for turn in (1, 2, 3):
                values = [
                    r["score"]
                    for r in lines
                    if r["model"] == model
                    and r["turn"] == turn
                    and r["question_id"].split("_")[1] == category
                    and not (drop_unparsable and r["score"] == -1)
                ]
                if values:
                    per_turn.append(sum(values) / len(values))
            if per_turn:
                scores[category] = sum(per_turn) / len(per_turn)
        scores["average"] = sum(scores.values()) / len(scores)
        out[model] = scores
    return out


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_real_gpt4o_judgments_per_scenario(shared, tmp_path):
    real = shared / "datasets/real/rad-bench/model_judgment_sample.jsonl"
    lines = lines_of(real)
    assert len(lines) == 60
    expected = hand_table(lines)
    # one concrete cell, by hand: gpt-4o on academic, turn by turn
    gpt4o = [[r["score"] for r in lines if r["model"] == "gpt-4o" and r["turn"] == t] for t in (1, 2, 3)]
    assert expected["gpt-4o"]["academic"] == pytest.approx(sum(sum(s) / len(s) for s in gpt4o) / 3)

    out = tmp_path / "table.json"
    assert main(["judge", "rad-bench", "--judgments", str(real), "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    (table,) = data["tables"]
    assert table["source"] == "model_judgment_sample.jsonl" and table["judgments"] == 60
    assert table["table"].keys() == expected.keys() and len(expected) == 7
    for model, row in expected.items():
        assert table["table"][model] == pytest.approx(row)
    # a folder gives the same table (its top-level *judg*.jsonl file)
    (from_dir,) = rad_bench_tables(real.parent)
    assert from_dir.table == table["table"]


def test_unparsable_ratings_kept_as_released_or_dropped(shared, tmp_path):
    data = shared / "datasets/fixtures/rad_bench/data/model_judgment/gpt-4o.jsonl"
    lines = lines_of(data)
    assert any(r["score"] == -1 for r in lines)
    (kept,) = rad_bench_tables(data)
    (dropped,) = rad_bench_tables(data, drop_unparsable=True)
    for model, row in hand_table(lines).items():
        assert kept.table[model] == pytest.approx(row)
    for model, row in hand_table(lines, drop_unparsable=True).items():
        assert dropped.table[model] == pytest.approx(row)
    assert kept.table != dropped.table
    assert kept.unparsable == {r["model"]: 1 for r in lines if r["score"] == -1}


def test_bad_inputs_are_one_error_line(tmp_path):
    bad = tmp_path / "judg.jsonl"
    bad.write_text(
        '{"question_id": "RS_academic_00", "turn": 1, "type": "RS", "score": "high", "model": "m", '
        '"judge": ["gpt-4o", "RS-1-turn"]}\n'
    )
    with pytest.raises(MtrbenchError, match=r"judg\.jsonl record 0 \(RS_academic_00\): 'score'"):
        rad_bench_tables(bad)
    proc = run_cli("judge", "rad-bench", "--judgments", str(tmp_path / "absent"), "--output", str(tmp_path / "t.json"))
    assert proc.returncode == 2 and proc.stderr.startswith("error:") and "Traceback" not in proc.stderr
    proc = run_cli("judge", "rad-bench", "--judgments", str(bad))
    assert proc.returncode == 2 and "--output" in proc.stderr


def test_category_score_is_mean_of_turn_means_not_flat_mean():
    """Turns with different numbers of ratings, so the two means differ (RAD-Bench's script_final_plots.py
    averages per turn first). By hand:
    academic: turn 1 [10] -> 10, turn 2 [2, 4, 6] -> 4; category (10 + 4) / 2 = 7 (flat mean 22/4 = 5.5)
    news: turn 1 [8, 6] -> 7, turn 2 [3] -> 3, turn 3 [5] -> 5; category 15/3 = 5 (flat mean 22/4 = 5.5)
    average (7 + 5) / 2 = 6."""
    ratings = {
        ("academic", 1): [10],
        ("academic", 2): [2, 4, 6],
        ("news", 1): [8, 6],
        ("news", 2): [3],
        ("news", 3): [5],
    }
    rows = [Rated("m", c, t, s) for (c, t), scores in ratings.items() for s in scores]
    table = scenario_table(rows)
    assert table == {"m": pytest.approx({"academic": 7.0, "news": 5.0, "average": 6.0})}
    assert turn_means(rows)["m"] == {"academic": {1: 10.0, 2: 4.0}, "news": {1: 7.0, 2: 3.0, 3: 5.0}}
