"""`mtrbench compare A B C ...`: one table of systems x measures with significance letters.

The systems are the six history strategies of BM25 on the sample (real results, tests/data/compare). Every letter
is checked against scipy's ``ttest_rel`` p-values Holm-adjusted by statsmodels' ``multipletests``, computed here
from the per-query files alone.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from statistics import fmean
from string import ascii_lowercase

import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from mtrbench.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "compare"
HISTORIES = ("current", "full", "window-5", "questions", "last-response", "rewrite")
RESULTS = [str(DATA / h / "mtrbench-sample.json") for h in HISTORIES]
MEASURES = {"nDCG@10": "ndcg_at_10", "Recall@100": "recall_at_100", "MRR@10": "mrr_at_10"}
ALPHA = 0.05


def per_query(history: str) -> dict[str, dict]:
    rows = [json.loads(line) for line in (DATA / history / "mtrbench-sample.per_query.jsonl").open()]
    return {r["qid"]: r for r in rows}


@pytest.fixture(scope="module")
def rows() -> list[dict[str, dict]]:
    return [per_query(h) for h in HISTORIES]


def units(rows: list[dict[str, dict]], key: str, unit: str) -> list[list[float]]:
    """Per system, the values the test pairs: each query's, or each conversation's mean over its turns."""
    qids = sorted(set.intersection(*(set(r) for r in rows)))
    if unit == "query":
        return [[r[q][key] for q in qids] for r in rows]
    conversations = sorted({rows[0][q]["conversation_id"] for q in qids})
    return [[fmean(r[q][key] for q in qids if r[q]["conversation_id"] == c) for c in conversations] for r in rows]


def expected_letters(rows, key: str, pairs: list[tuple[int, int]], unit: str = "query") -> list[str]:
    """Letters per system: the systems it beats, from ttest_rel p-values Holm-adjusted with statsmodels."""
    values = units(rows, key, unit)
    p = [stats.ttest_rel(values[b], values[a]).pvalue for a, b in pairs]
    reject = multipletests(p, alpha=ALPHA, method="holm")[0]
    beats: list[set[int]] = [set() for _ in rows]
    for (a, b), significant in zip(pairs, reject):
        if significant:
            better, worse = (b, a) if fmean(values[b]) > fmean(values[a]) else (a, b)
            beats[better].add(worse)
    return ["".join(ascii_lowercase[j] for j in sorted(s)) for s in beats]


def run_json(tmp_path, *extra: str) -> dict:
    out = tmp_path / "table.json"
    assert main(["compare", *RESULTS, "--measures", ",".join(MEASURES), "--output", str(out), *extra]) == 0
    return json.loads(out.read_text())


BASELINE_PAIRS = [(0, j) for j in range(1, 6)]
ALL_PAIRS = [(i, j) for i in range(6) for j in range(i + 1, 6)]


@pytest.mark.parametrize(
    "extra, pairs, unit",
    [
        ((), BASELINE_PAIRS, "query"),
        (("--all-pairs",), ALL_PAIRS, "query"),
        (("--unit", "conversation", "--baseline", "rewrite"), [(5, j) for j in range(5)], "conversation"),
    ],
)
def test_letters_equal_scipy_t_tests_with_statsmodels_holm(rows, tmp_path, extra, pairs, unit):
    table = run_json(tmp_path, *extra)
    assert [s["name"] for s in table["systems"]] == [
        "current",
        "full",
        "window:5",
        "questions",
        "last-response",
        "rewrite",
    ]
    for label, key in MEASURES.items():
        expected = expected_letters(rows, key, pairs, unit)
        assert ["".join(s["better_than"][key]) for s in table["systems"]] == expected, label
        for system, r in zip(table["systems"], rows):
            assert system["means"][key] == pytest.approx(fmean(v[key] for v in r.values()), abs=1e-12)
    assert table["units"] == (214 if unit == "query" else len({r["conversation_id"] for r in rows[0].values()}))
    # the letters are not all empty nor all full: the test distinguishes something on this data
    letters = ["".join(s["better_than"][k]) for s in table["systems"] for k in MEASURES.values()]
    assert any(letters) and not all(letters)


def test_raw_p_values_are_scipys_and_holm_is_statsmodels(rows, tmp_path):
    table = run_json(tmp_path, "--all-pairs")
    for _label, key in MEASURES.items():
        values = units(rows, key, "query")
        tests = [t for t in table["tests"] if t["measure"] == key]
        assert [(t["a"], t["b"]) for t in tests] == [(ascii_lowercase[a], ascii_lowercase[b]) for a, b in ALL_PAIRS]
        # pairs where every query ties (Recall@100 of 1.0 everywhere) have no test and are not counted in Holm's m
        tested = [(t, (a, b)) for t, (a, b) in zip(tests, ALL_PAIRS) if t["p_value"] is not None]
        p = [stats.ttest_rel(values[b], values[a]).pvalue for _, (a, b) in tested]
        assert [t["p_value"] for t, _ in tested] == pytest.approx(p, rel=1e-9)
        assert [t["p_holm"] for t, _ in tested] == pytest.approx(list(multipletests(p, method="holm")[1]), rel=1e-9)


def latex_problems(text: str, columns: int) -> list[str]:
    """What would stop the table compiling: unbalanced braces, a missing tabular, a row of the wrong width."""
    problems = []
    unescaped = re.sub(r"\\[{}&%$#_]", "", text)
    depth = 0
    for c in unescaped:
        depth += {"{": 1, "}": -1}.get(c, 0)
        if depth < 0:
            problems.append("} before its {")
    if depth:
        problems.append(f"{depth} unclosed brace(s)")
    body = text[text.index("\\begin{tabular}") : text.index("\\end{tabular}")]
    spec = re.match(r"\\begin\{tabular\}\{([lcr]+)\}", body).group(1)
    if len(spec) != columns:
        problems.append(f"column spec {spec} for {columns} columns")
    for line in body.splitlines():
        if line.endswith("\\\\"):
            cells = len(re.findall(r"(?<!\\)&", line)) + 1
            if cells != columns:
                problems.append(f"{cells} cells: {line}")
    if text.count("\\begin{") != text.count("\\end{"):
        problems.append("begin/end mismatch")
    if len(re.findall(r"(?<!\\)\$", text)) % 2:
        problems.append("unbalanced $")
    if re.search(r"(?<!\$)[<>](?![^$]*\$)", text.split("\\caption", 1)[-1]):
        problems.append("< or > outside math mode in the caption")
    return problems


def test_latex_output_is_well_formed_and_carries_the_letters(rows, tmp_path):
    out = tmp_path / "table.tex"
    assert main(["compare", *RESULTS, "--measures", ",".join(MEASURES), "--output", str(out)]) == 0
    text = out.read_text()
    assert latex_problems(text, columns=2 + len(MEASURES)) == []
    assert "\\toprule" in text and "window:5" in text and "last-response" in text
    body = [line for line in text.splitlines() if line.startswith("(")]
    assert len(body) == 6
    for label, key in MEASURES.items():
        column = 2 + list(MEASURES).index(label)
        expected = expected_letters(rows, key, BASELINE_PAIRS)
        for line, letters in zip(body, expected):
            cell = re.split(r"(?<!\\)&", line.removesuffix("\\\\"))[column].strip()
            found = re.search(r"\$\^\{\\mathrm\{([a-z]+)\}\}\$", cell)
            assert (found.group(1) if found else "") == letters
    for key in MEASURES.values():  # every system with the highest mean is bold, ties included (Recall@100: 1.0)
        means = [fmean(r[q][key] for q in r) for r in rows]
        bold = [f"\\textbf{{{means[i]:.4f}}}" in body[i] for i in range(6)]
        assert bold == [m == max(means) for m in means], key


def test_markdown_and_csv_carry_the_same_table(rows, tmp_path):
    md, csv_path = tmp_path / "t.md", tmp_path / "t.csv"
    for path in (md, csv_path):
        assert main(["compare", *RESULTS, "--measures", "nDCG@10", "--all-pairs", "--output", str(path)]) == 0
    expected = expected_letters(rows, "ndcg_at_10", ALL_PAIRS)
    records = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert [r["nDCG@10 better than"] for r in records] == expected
    assert [float(r["nDCG@10"]) for r in records] == pytest.approx(
        [fmean(r[q]["ndcg_at_10"] for q in r) for r in rows], abs=1e-6
    )
    lines = [line for line in md.read_text().splitlines() if line.startswith("| (")]
    assert [re.search(r"<sup>([a-z]+)</sup>", line).group(1) if "<sup>" in line else "" for line in lines] == expected
    assert sum("**" in line for line in lines) == 1


def test_trec_runs_scored_with_the_tasks_qrels(tmp_path):
    import pytrec_eval

    from mtrbench.data import load_task

    task = load_task("mtrbench-sample", require_corpus=False)
    qrels = task.qrels()
    runs = []
    for n, shift in enumerate((0, 3)):  # the second run ranks three unjudged documents first
        lines = []
        for qid, rels in qrels.items():
            docs = [f"junk{i}" for i in range(shift)] + sorted(rels, key=lambda d: -rels[d])
            lines += [f"{qid} Q0 {d} {i + 1} {100 - i} r{n}\n" for i, d in enumerate(docs)]
        path = tmp_path / f"r{n}.trec"
        path.write_text("".join(lines))
        runs.append(path)
    out = tmp_path / "runs.json"
    assert (
        main(["compare", *map(str, runs), "--task", "mtrbench-sample", "--measures", "nDCG@10", "--output", str(out)])
        == 0
    )
    table = json.loads(out.read_text())
    measured = [
        pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(
            {
                q: {
                    d: float(s)
                    for d, s in (line.split()[2:5:2] for line in p.read_text().splitlines() if line.startswith(q + " "))
                }
                for q in qrels
            }
        )
        for p in runs
    ]
    qids = sorted(qrels)
    a, b = ([m[q]["ndcg_cut_10"] for q in qids] for m in measured)
    assert [s["means"]["ndcg_at_10"] for s in table["systems"]] == pytest.approx([fmean(a), fmean(b)], abs=1e-9)
    assert table["tests"][0]["p_value"] == pytest.approx(stats.ttest_rel(b, a).pvalue, rel=1e-9)
    assert table["systems"][0]["better_than"]["ndcg_at_10"] == ["b"]


def test_two_results_alone_keep_the_detailed_comparison(capsys):
    assert main(["compare", RESULTS[0], RESULTS[5], "--metrics", "ndcg_at_10"]) == 0
    out = capsys.readouterr().out
    assert "p(t) Holm" in out and "win/tie/loss" in out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--measures", "nDCG@10,Bogus@3"], "Bogus"),
        (["--measures", "nDCG@20"], "lacks per-query values of ndcg_at_20"),
        (["--baseline", "z"], "--baseline z: not a system's letter"),
        (["--names", "a,b"], "--names has 2 names for 6 systems"),
        (["--alpha", "1.5"], "--alpha must be between 0 and 1"),
        (["--measures", "nDCG@10", "--tie-epsilon", "0.1"], "--tie-epsilon belong to the two-result comparison"),
    ],
)
def test_bad_options_are_one_error_line(extra, message, capsys):
    assert main(["compare", *RESULTS, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err


def test_a_trec_run_without_qrels_is_refused(tmp_path, capsys):
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d1 1 1.0 r\n")
    assert main(["compare", RESULTS[0], str(run)]) == 2
    assert "give --qrels FILE or --task NAME" in capsys.readouterr().err


def test_randomization_p_values_are_scipys_sign_flip_test(rows, tmp_path):
    import numpy as np

    out = tmp_path / "table.json"
    chosen = [0, 1, 3]  # current (baseline), full, questions: two tests keep it quick
    assert (
        main(
            [
                "compare",
                *(RESULTS[i] for i in chosen),
                "--measures",
                "nDCG@10",
                "--test",
                "randomization",
                "--output",
                str(out),
            ]
        )
        == 0
    )
    table = json.loads(out.read_text())
    values = units([rows[i] for i in chosen], "ndcg_at_10", "query")
    tests = [t for t in table["tests"] if t["measure"] == "ndcg_at_10"]
    expected = []
    for a, b in [(0, 1), (0, 2)]:
        x, y = np.array(values[b]), np.array(values[a])
        expected.append(
            stats.permutation_test(
                (x, y),
                lambda u, v, axis: np.mean(u - v, axis=axis),
                permutation_type="samples",
                n_resamples=10_000,
                vectorized=True,
                random_state=np.random.default_rng(0),
            ).pvalue
        )
    assert [t["p_value"] for t in tests] == pytest.approx(expected, abs=1e-12)
    assert [t["p_holm"] for t in tests] == pytest.approx(list(multipletests(expected, method="holm")[1]), abs=1e-12)
    assert table["test"] == "randomization"


def test_unit_conversation_tests_conversation_means_for_conversations_of_unequal_length(rows, tmp_path):
    """Conversations of 1 to 7 turns: the paired values are each conversation's mean over its turns, so a long
    conversation counts once, not once per turn (as queries would), and not by its sum (as an unweighted
    total would)."""
    import numpy as np

    by_conversation: dict[str, list[str]] = {}
    for qid, row in sorted(rows[0].items(), key=lambda item: (item[1]["conversation_id"], item[1]["turn_id"])):
        by_conversation.setdefault(row["conversation_id"], []).append(qid)
    lengths = (1, 7, 2, 6, 3, 5, 1, 4)
    chosen = {c: qids[:n] for (c, qids), n in zip(sorted(by_conversation.items()), lengths)}
    assert sorted(len(q) for q in chosen.values()) == sorted(lengths)  # the sample has these turns to give
    rng = np.random.default_rng(7)
    base = {q: float(rng.uniform(0.2, 0.6)) for qids in chosen.values() for q in qids}
    # long conversations gain a little on every turn, short ones lose a lot: the unit decides the verdict
    shift = {
        q: (0.05 if len(qids) >= 4 else -0.15) + float(rng.normal(0, 0.02)) for qids in chosen.values() for q in qids
    }
    paths = []
    for name, values in (("a", base), ("b", {q: base[q] + shift[q] for q in base})):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"run": name, "per_query": {q: {"ndcg_at_10": v} for q, v in values.items()}}))
        paths.append(str(path))
    out = tmp_path / "table.json"
    command = ["compare", *paths, "--task", "mtrbench-sample", "--measures", "nDCG@10", "--output", str(out)]
    assert main([*command, "--unit", "conversation"]) == 0
    table = json.loads(out.read_text())

    def per_unit(values: dict[str, float], reduce) -> list[float]:
        return [reduce([values[q] for q in qids]) for qids in chosen.values()]

    b = {q: base[q] + shift[q] for q in base}
    expected = stats.ttest_rel(per_unit(b, fmean), per_unit(base, fmean)).pvalue
    assert table["units"] == len(chosen)
    assert table["tests"][0]["p_value"] == pytest.approx(expected, rel=1e-9)
    # the alternatives give clearly different p-values on this data, so the check above tells them apart
    by_query = stats.ttest_rel([b[q] for q in base], [base[q] for q in base]).pvalue
    by_sum = stats.ttest_rel(per_unit(b, sum), per_unit(base, sum)).pvalue
    assert abs(by_query - expected) > 0.05 and abs(by_sum - expected) > 0.05


@pytest.mark.parametrize(
    "extra, noted",
    [
        ((), True),  # the table, unit not chosen
        (("--unit", "query"), False),
        (("--unit", "conversation"), False),
    ],
)
def test_the_unit_is_named_on_stderr_when_not_chosen(extra, noted, capsys):
    assert main(["compare", *RESULTS[:3], "--measures", "nDCG@10", "--format", "csv", *extra]) == 0
    captured = capsys.readouterr()
    assert ("paired unit: each query (the default)" in captured.err) == noted
    assert "paired unit" not in captured.out  # the csv on stdout stays clean


def test_the_two_result_comparison_names_its_unit(capsys):
    assert main(["compare", RESULTS[0], RESULTS[5], "--metrics", "ndcg_at_10"]) == 0
    assert "paired unit: each query (the default)" in capsys.readouterr().err
