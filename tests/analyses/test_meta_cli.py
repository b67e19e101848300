"""`mtrbench meta power|stability|size` end to end on tiny files: JSON keys, warnings, errors, seeds, plots."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from mtrbench.cli import main

RESULTS_V01 = Path(__file__).resolve().parents[1] / "data" / "results-v0.1"
# Where each run puts the one relevant document of every query (rank from 1; 0: not retrieved).
PLACES = {
    "best": [1, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1, 1],
    "good": [1, 2, 1, 2, 1, 3, 2, 1, 1, 2, 1, 3],
    "fair": [3, 2, 0, 1, 3, 2, 3, 0, 2, 1, 0, 2],
    "poor": [0, 3, 0, 0, 3, 0, 0, 3, 0, 0, 2, 0],
}
QUERIES = [f"c{c}_{t}" for c in range(1, 5) for t in range(1, 4)]  # 4 conversations of 3 turns


def _no_nan(text: str) -> dict:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the JSON")

    return json.loads(text, parse_constant=refuse)


def _write_task(folder: Path, places: dict[str, list[int]], queries: list[str] = QUERIES) -> tuple[list[str], str]:
    qrels = folder / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 rel-{q} 1\n{q} 0 other-{q} 0\n" for q in queries))
    runs = []
    for name, ranks in places.items():
        lines = []
        for q, rank in zip(queries, ranks):
            docs = [f"{name}{i}-{q}" for i in range(3)]
            if rank:
                docs[rank - 1] = f"rel-{q}"
            lines += [f"{q} Q0 {d} {i + 1} {10 - i} {name}\n" for i, d in enumerate(docs)]
        path = folder / f"{name}.run"
        path.write_text("".join(lines))
        runs.append(str(path))
    return runs, str(qrels)


def _mrr(rank: int) -> float:
    return 1.0 / rank if rank else 0.0


def test_power_json_holds_the_pairs_and_the_discriminative_power(tmp_path, capsys):
    runs, qrels = _write_task(tmp_path, PLACES)
    out = tmp_path / "power.json"
    assert (
        main(
            [
                "meta",
                "power",
                "--runs",
                *runs,
                "--qrels",
                qrels,
                "--measures",
                "RR@10",
                "--unit",
                "query",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    document = _no_nan(out.read_text())
    assert {"pairs", "discriminative_power", "seed", "samples", "unit", "test"} <= set(document)
    assert len(document["pairs"]) == 6 and all({"a", "b", "diff", "p"} <= set(p) for p in document["pairs"])
    best_poor = next(p for p in document["pairs"] if (p["a"], p["b"]) == ("best", "poor"))
    expected = np.mean([_mrr(r) for r in PLACES["best"]]) - np.mean([_mrr(r) for r in PLACES["poor"]])
    assert best_poor["diff"] == pytest.approx(expected)
    significant = sum(p["p"] < 0.05 for p in document["pairs"])
    assert document["discriminative_power"] == pytest.approx(significant / 6)
    printed = capsys.readouterr().out
    assert "discriminative power" in printed and max(len(line) for line in printed.splitlines()) <= 80


@pytest.mark.parametrize("test", ["bootstrap", "tukey-hsd", "randomization"])
def test_same_seed_same_json_and_the_draw_is_recorded(tmp_path, test):
    runs, qrels = _write_task(tmp_path, PLACES)
    texts = []
    for name in ("one.json", "two.json"):
        assert (
            main(
                [
                    "meta",
                    "power",
                    "--runs",
                    *runs,
                    "--qrels",
                    qrels,
                    "--measures",
                    "RR@10",
                    "--test",
                    test,
                    "--samples",
                    "200",
                    "--seed",
                    "7",
                    "--output",
                    str(tmp_path / name),
                ]
            )
            == 0
        )
        texts.append((tmp_path / name).read_text())
    assert texts[0] == texts[1]
    document = _no_nan(texts[0])
    assert (document["seed"], document["samples"], document["unit"], document["test"]) == (7, 200, "conversation", test)
    assert document["units"] == 4


def test_uncovered_queries_score_zero_and_are_counted(tmp_path, capsys):
    runs, qrels = _write_task(tmp_path, PLACES)
    fair = Path(runs[2])
    fair.write_text(
        "".join(line for line in fair.read_text().splitlines(keepends=True) if not line.startswith("c2_2 "))
    )
    out = tmp_path / "power.json"
    assert main(["meta", "power", "--runs", *runs, "--qrels", qrels, "--measures", "RR@10", "--output", str(out)]) == 0
    assert "warning:" in capsys.readouterr().err
    document = _no_nan(out.read_text())
    assert document["filled_with_zero"] == {"fair": 1}
    ranks = list(PLACES["fair"])
    ranks[QUERIES.index("c2_2")] = 0
    pair = next(p for p in document["pairs"] if p["a"] == "fair" and p["b"] == "poor")
    assert pair["mean_a"] == pytest.approx(np.mean([_mrr(r) for r in ranks]))


@pytest.mark.parametrize(
    "case, needle",
    [
        ("one system", "at least two"),
        ("one query", "at least two"),
        ("all ties", "the same on every query"),
        ("unknown test", "--test must be one of"),
        ("bad plot", ".png or .svg"),
    ],
)
def test_bad_inputs_give_one_error_line(tmp_path, capsys, case, needle):
    if case == "one query":
        runs, qrels = _write_task(tmp_path, {k: v[:1] for k, v in PLACES.items()}, QUERIES[:1])
    elif case == "all ties":
        runs, qrels = _write_task(tmp_path, {"a": PLACES["good"], "b": PLACES["good"], "c": PLACES["good"]})
    else:
        runs, qrels = _write_task(tmp_path, PLACES)
    args = ["meta", "power", "--runs", *(runs[:1] if case == "one system" else runs), "--qrels", qrels]
    args += {"unknown test": ["--test", "wilcoxon"], "bad plot": ["--plot", str(tmp_path / "f.pdf")]}.get(case, [])
    assert main(args + ["--output", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and needle in err[0]
    assert not (tmp_path / "out.json").exists()


def test_stability_json_holds_kendall_tau_and_tau_ap(tmp_path, capsys):
    runs, qrels = _write_task(tmp_path, PLACES)
    out = tmp_path / "stability.json"
    assert (
        main(
            [
                "meta",
                "stability",
                "--runs",
                *runs,
                "--qrels",
                qrels,
                "--measures",
                "RR@10",
                "--vs-measure",
                "nDCG@1",
                "--samples",
                "50",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    document = _no_nan(out.read_text())
    assert {"kendall_tau", "tau_ap", "swapped", "swap", "seed", "samples", "unit"} <= set(document)
    from scipy import stats

    expected = stats.kendalltau(document["means_first"], document["means_second"]).statistic
    assert document["kendall_tau"] == pytest.approx(expected)
    assert document["swap"]["subset_size"] == 2  # half of the 4 conversations
    assert main(["meta", "stability", "--runs", *runs, "--qrels", qrels]) == 2
    assert "exactly one second condition" in capsys.readouterr().err


def test_stability_against_other_qrels_finds_the_swap(tmp_path):
    runs, qrels = _write_task(tmp_path, PLACES)
    refined = tmp_path / "refined.txt"
    # refinement finds the poor run's unjudged first documents relevant: poor jumps to the top
    refined.write_text(Path(qrels).read_text() + "".join(f"{q} 0 poor0-{q} 1\n" for q in QUERIES))
    out = tmp_path / "s.json"
    assert (
        main(
            [
                "meta",
                "stability",
                "--runs",
                *runs,
                "--qrels",
                qrels,
                "--vs-qrels",
                str(refined),
                "--measures",
                "P@1",
                "--samples",
                "20",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    document = _no_nan(out.read_text())
    assert document["means_second"][3] == 1.0 and document["means_second"][:3] == document["means_first"][:3]
    assert {(p["a"], p["b"]) for p in document["swapped"]} == {("best", "poor"), ("good", "poor"), ("fair", "poor")}
    assert document["kendall_tau"] == pytest.approx(0.0) and document["tau_ap"] < document["kendall_tau"]


@pytest.mark.slow  # renders three matplotlib figures (PNG and SVG): about 10 s on 2 busy CPU cores
def test_size_json_and_plots_of_every_command(tmp_path):
    runs, qrels = _write_task(tmp_path, PLACES)
    out = tmp_path / "size.json"
    assert (
        main(
            [
                "meta",
                "size",
                "--runs",
                *runs,
                "--qrels",
                qrels,
                "--measures",
                "RR@10",
                "--delta",
                "0.1",
                "--output",
                str(out),
                "--plot",
                str(tmp_path / "size.svg"),
            ]
        )
        == 0
    )
    document = _no_nan(out.read_text())
    assert document["current_size"] == 4 and document["paired_t"]["required"] >= 2
    assert (tmp_path / "size.svg").read_text().lstrip().startswith(("<?xml", "<svg"))
    assert (
        main(
            [
                "meta",
                "power",
                "--runs",
                *runs,
                "--qrels",
                qrels,
                "--measures",
                "RR@10,nDCG@3",
                "--unit",
                "conversation,query",
                "--plot",
                str(tmp_path / "power.png"),
            ]
        )
        == 0
    )
    assert (tmp_path / "power.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (
        main(
            [
                "meta",
                "stability",
                "--runs",
                *runs,
                "--qrels",
                qrels,
                "--vs-measure",
                "P@1",
                "--samples",
                "20",
                "--plot",
                str(tmp_path / "stability.png"),
            ]
        )
        == 0
    )
    assert (tmp_path / "stability.png").read_bytes()[:4] == b"\x89PNG"


def test_results_and_per_query_files_are_inputs_with_their_conversations(tmp_path):
    for name, model in (("a", "bm25"), ("b", "other")):
        folder = tmp_path / name
        shutil.copytree(RESULTS_V01, folder)
        document = json.loads((folder / "mtrbench-sample.json").read_text())
        document["mtrbench"]["model"]["name"] = model
        (folder / "mtrbench-sample.json").write_text(json.dumps(document))
    rows = [json.loads(line) for line in (tmp_path / "b" / "mtrbench-sample.per_query.jsonl").read_text().splitlines()]
    for row in rows:
        row["ndcg_at_10"] = row["ndcg_at_10"] / 2
    (tmp_path / "b" / "mtrbench-sample.per_query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "power.json"
    assert (
        main(
            [
                "meta",
                "power",
                "--results",
                str(tmp_path / "a" / "mtrbench-sample.json"),
                str(tmp_path / "b" / "mtrbench-sample.per_query.jsonl"),
                "--measures",
                "nDCG@10",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    document = _no_nan(out.read_text())
    assert document["systems"] == ["bm25", "other"] and document["queries"] == len(rows)
    assert document["units"] == len({row["conversation_id"] for row in rows})
    original = np.mean([2 * r["ndcg_at_10"] for r in rows])
    assert document["pairs"][0]["diff"] == pytest.approx(original / 2)


def test_a_leaderboard_brings_its_entries_result_files(tmp_path):
    folder = tmp_path / "results" / "bm25"
    shutil.copytree(RESULTS_V01, folder)
    other = tmp_path / "results" / "other"
    shutil.copytree(RESULTS_V01, other)
    document = json.loads((other / "mtrbench-sample.json").read_text())
    document["mtrbench"]["model"]["name"] = "other"
    (other / "mtrbench-sample.json").write_text(json.dumps(document))
    board = {
        "schema_version": 1,
        "name": "t",
        "entries": [
            {"id": "a", "source": {"result_file": "results/bm25/mtrbench-sample.json"}},
            {"id": "b", "source": {"result_file": "results/other/mtrbench-sample.json"}},
        ],
    }
    (tmp_path / "board.json").write_text(json.dumps(board))
    out = tmp_path / "size.json"
    # identical per-query values: nothing to tell apart, said in one line
    assert (
        main(["meta", "size", "--results", str(tmp_path / "board.json"), "--delta", "0.1", "--output", str(out)]) == 2
    )
    rows = [json.loads(line) for line in (other / "mtrbench-sample.per_query.jsonl").read_text().splitlines()]
    for i, row in enumerate(rows):
        row["ndcg_at_10"] = min(1.0, row["ndcg_at_10"] + 0.05 * (i % 3))
    (other / "mtrbench-sample.per_query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert (
        main(["meta", "size", "--results", str(tmp_path / "board.json"), "--delta", "0.1", "--output", str(out)]) == 0
    )
    document = _no_nan(out.read_text())
    assert document["measure"] == "ndcg_at_10" and document["systems"] == 2  # the results' main score
    assert document["current_size"] == len({row["conversation_id"] for row in rows})


def test_tasks_are_analysed_side_by_side_and_picked_by_tasks(tmp_path, capsys):
    paths = []
    for task in ("task-one", "task-two"):
        for model, shift in (("m1", 0.0), ("m2", 0.3)):
            folder = tmp_path / task / model
            shutil.copytree(RESULTS_V01, folder)
            document = json.loads((folder / "mtrbench-sample.json").read_text())
            document["task_name"], document["mtrbench"]["model"]["name"] = task, model
            document["mtrbench"]["main_score_key"] = "ndcg_at_10"
            (folder / "mtrbench-sample.json").write_text(json.dumps(document))
            per_query = folder / "mtrbench-sample.per_query.jsonl"
            rows = [json.loads(line) for line in per_query.read_text().splitlines()]
            for i, row in enumerate(rows):
                row["ndcg_at_10"] = max(0.0, row["ndcg_at_10"] - shift * (i % 2))
            per_query.write_text("".join(json.dumps(r) + "\n" for r in rows))
            paths.append(str(folder / "mtrbench-sample.json"))
    out = tmp_path / "power.json"
    assert main(["meta", "power", "--results", *paths, "--output", str(out)]) == 0
    document = _no_nan(out.read_text())
    assert [r["task"] for r in document["reports"]] == ["task-one", "task-two"]
    assert all(r["systems"] == ["m1", "m2"] for r in document["reports"])
    assert main(["meta", "power", "--results", *paths, "--tasks", "task-two", "--output", str(out)]) == 0
    document = _no_nan(out.read_text())
    assert document["task"] == "task-two" and "reports" not in document
    assert main(["meta", "power", "--results", *paths, "--tasks", "task-three"]) == 2
    assert "task-three" in capsys.readouterr().err


def test_stability_between_two_sets_of_results_pairs_them_in_order(tmp_path):
    """Two history strategies of three models: the second condition reverses the order of the first."""
    conditions = {}
    for condition, shifts in (("full", (0.0, 0.1, 0.2)), ("current", (0.2, 0.1, 0.0))):
        paths = []
        for model, shift in zip(("m1", "m2", "m3"), shifts):
            folder = tmp_path / condition / model
            shutil.copytree(RESULTS_V01, folder)
            document = json.loads((folder / "mtrbench-sample.json").read_text())
            document["mtrbench"]["model"]["name"] = model
            document["mtrbench"]["settings"]["history"] = condition
            (folder / "mtrbench-sample.json").write_text(json.dumps(document))
            per_query = folder / "mtrbench-sample.per_query.jsonl"
            rows = [json.loads(line) for line in per_query.read_text().splitlines()]
            for row in rows:
                row["ndcg_at_10"] = row["ndcg_at_10"] * (1 - shift)
            per_query.write_text("".join(json.dumps(r) + "\n" for r in rows))
            paths.append(str(folder / "mtrbench-sample.json"))
        conditions[condition] = paths
    out = tmp_path / "s.json"
    assert (
        main(
            [
                "meta",
                "stability",
                "--results",
                *conditions["full"],
                "--vs-results",
                *conditions["current"],
                "--measures",
                "nDCG@10",
                "--samples",
                "20",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    document = _no_nan(out.read_text())
    assert document["systems"] == ["m1", "m2", "m3"]
    assert document["kendall_tau"] == pytest.approx(-1.0) and document["tau_ap"] == pytest.approx(-1.0)
    assert len(document["swapped"]) == 3


def _wrapped_pairs(printed: str) -> set[tuple[str, str]]:
    """The (A, B) names of the pair table, rejoined where a long name wraps onto the next lines."""
    lines = printed.splitlines()
    start = next(n for n, line in enumerate(lines) if line.split()[:2] == ["A", "B"])
    pairs: list[list[str]] = []
    for line in lines[start + 2 :]:  # after the header and its rule
        tokens = line.split()
        if len(tokens) == 4:
            pairs.append(tokens[:2])
        elif len(tokens) == 2 and pairs:
            pairs[-1] = [pairs[-1][0] + tokens[0], pairs[-1][1] + tokens[1]]
        else:
            break
    return {(a, b) for a, b in pairs}


def test_power_shows_long_system_names_whole(tmp_path, capsys):
    long_names = {
        f"{name}-system-with-a-long-descriptive-name-{n}": ranks for n, (name, ranks) in enumerate(PLACES.items())
    }
    runs, qrels = _write_task(tmp_path, long_names)
    assert main(["meta", "power", "--runs", *runs, "--qrels", qrels, "--measures", "RR@10", "--unit", "query"]) == 0
    printed = capsys.readouterr().out
    assert max(len(line) for line in printed.splitlines()) <= 80
    names = list(long_names)
    assert {frozenset(p) for p in _wrapped_pairs(printed)} == {
        frozenset((a, b)) for i, a in enumerate(names) for b in names[i + 1 :]
    }
