"""Tie-aware ranks: neighbours not significantly different (paired t-test on conversation means, Holm over the
adjacent pairs) share a rank group; expected groups are computed here from scipy and statsmodels."""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from mtrbench.cli import main
from mtrbench.leaderboard.ties import chain_groups

ALPHA = 0.05


def _results(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("mtrbench-sample.json"))


def _conversation_means(result: Path, metric: str) -> dict[str, float]:
    document = json.loads(result.read_text())
    rows = [json.loads(line) for line in result.with_name(document["mtrbench"]["files"]["per_query"]).open()]
    by_conversation: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        by_conversation[row["conversation_id"]].append(row[metric])
    return {c: sum(v) / len(v) for c, v in by_conversation.items()}


def expected_groups(results: dict[str, Path], metric: str = "ndcg_at_10") -> dict[str, str]:
    """name -> "i" or "i-j", from scipy's paired t-test and statsmodels' Holm on the adjacent pairs."""
    from scipy.stats import ttest_rel
    from statsmodels.stats.multitest import multipletests

    scores = {n: json.loads(p.read_text())["scores"]["test"][0][metric] for n, p in results.items()}
    order = sorted(scores, key=lambda n: -scores[n])
    means = {n: _conversation_means(p, metric) for n, p in results.items()}
    conversations = sorted(means[order[0]])
    p_values = [
        ttest_rel([means[a][c] for c in conversations], [means[b][c] for c in conversations]).pvalue
        for a, b in zip(order, order[1:])
    ]
    rejected = multipletests(p_values, alpha=ALPHA, method="holm")[0]
    labels, start = {}, 0
    for i in range(len(order)):
        if i == len(order) - 1 or rejected[i]:
            for name in order[start : i + 1]:
                labels[name] = str(start + 1) if start == i else f"{start + 1}-{i + 1}"
            start = i + 1
    return labels


@pytest.fixture(scope="module")
def one_group(sample_bm25_histories, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The six history strategies made six systems of ONE comparable group (a copy of each result whose model is
    named after its strategy and whose history reads `current`), and the expected rank labels by model."""
    folder = tmp_path_factory.mktemp("one-group")
    expected_by_history: dict[str, Path] = {}
    for n, result in enumerate(_results(sample_bm25_histories)):
        document = json.loads(result.read_text())
        history = document["mtrbench"]["settings"]["history"]
        target = folder / f"s{n}"
        shutil.copytree(result.parent, target, ignore=shutil.ignore_patterns("experiments"))
        document["mtrbench"]["model"]["name"] = f"bm25-{history}"
        document["mtrbench"]["settings"]["history"] = "current"
        (target / result.name).write_text(json.dumps(document))
        expected_by_history[history] = result
    expected = {f"bm25-{h}": label for h, label in expected_groups(expected_by_history).items()}
    return folder, expected


def test_chains_extend_while_each_adjacent_pair_is_tied():
    order = ["a", "b", "c", "d", "e"]
    spans = chain_groups(order, [True, False, True, True])
    assert spans == {"a": (1, 2), "b": (1, 2), "c": (3, 5), "d": (3, 5), "e": (3, 5)}
    assert chain_groups(order, [False] * 4) == {k: (i, i) for i, k in enumerate(order, 1)}


def test_show_ranks_the_six_strategies_as_scipy_and_holm_do(one_group, tmp_path, capsys):
    folder, expected = one_group
    assert len(expected) == 6 and any("-" in label for label in expected.values())  # the sample has ties
    board = tmp_path / "six.json"
    assert main(["leaderboard", "build", str(folder), "-o", str(board)]) == 0
    capsys.readouterr()
    assert main(["leaderboard", "show", str(board), "--results", str(folder)]) == 0
    out = capsys.readouterr().out
    shown = {}
    for line in out.splitlines():
        match = re.match(r"\s*(\d+(?:-\d+)?)\s+(bm25-\S+)\s", line)
        if match:
            shown[match.group(2)] = match.group(1)
    assert shown == expected
    text = " ".join(out.split())  # the caption wraps at the terminal's width
    assert "paired t-test on conversation means, Holm over the adjacent pairs, alpha 0.05" in text
    # the same table without per-query scores: plain ranks 1..6, and it says so
    assert main(["leaderboard", "show", str(board)]) == 0
    out = capsys.readouterr().out
    plain = [m.group(1) for line in out.splitlines() if (m := re.match(r"\s*(\S+)\s+bm25-\S+\s", line))]
    assert plain == ["1", "2", "3", "4", "5", "6"]
    assert "plain ranks: no per-query scores for 6 of the 6 systems" in " ".join(out.split())


def test_page_shows_the_rank_groups_and_states_the_method_once(one_group, tmp_path):
    folder, expected = one_group
    board = tmp_path / "six.json"
    assert main(["leaderboard", "build", str(folder), "-o", str(board)]) == 0
    assert main(["leaderboard", "html", str(board), "-o", str(tmp_path / "page"), "--results", str(folder)]) == 0
    html = (tmp_path / "page" / "index.html").read_text()
    pivot = html[html.index('<table class="sortable pivot"') :]
    pivot = pivot[: pivot.index("</table>")]
    rows = re.findall(r'<tr data-row="[^"]*"><td [^>]*>([^<]+)</td><td class="entry" data-sort="([^"]+)"', pivot)
    assert dict((name, label) for label, name in rows) == expected
    assert html.count("Holm over the adjacent pairs") == 1
    assert 'class="explore"' not in html  # no explorer was built beside this page


def test_rows_link_to_the_explorer_built_beside_the_page(one_group, tmp_path):
    folder, _ = one_group
    board, page = tmp_path / "six.json", tmp_path / "page"
    assert main(["leaderboard", "build", str(folder), "-o", str(board)]) == 0
    assert main(["explore", str(folder), "-o", str(page / "explore" / "mtrbench-sample")]) == 0
    assert main(["leaderboard", "html", str(board), "-o", str(page)]) == 0
    html = (page / "index.html").read_text()
    pivot = html[html.index('<table class="sortable pivot"') :]
    pivot = pivot[: pivot.index("</table>")]
    links = re.findall(r'<a class="explore" href="([^"]+)"', pivot)
    assert links == ["explore/mtrbench-sample/index.html"] * 6
    assert (page / links[0]).is_file()


def test_a_group_without_per_query_scores_keeps_plain_ranks(sample_bm25_histories, capsys):
    """The committed sample board: MiniLM's entries have no result here, so their groups keep plain ranks."""
    capsys.readouterr()
    assert main(["leaderboard", "show", "sample", "--results", str(sample_bm25_histories)]) == 0
    out = capsys.readouterr().out
    assert " ".join(out.split()).count("plain ranks: no per-query scores for 1 of the 2 systems") == 2
    assert not re.search(r"^\s*\d+-\d+\s", out, re.M)
