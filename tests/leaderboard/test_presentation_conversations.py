"""One conversation rule for the leaderboard's tie-aware ranks and the meta-analyses: a per-query row without
``conversation_id`` belongs to the conversation its query id names (``c3_2`` -> ``c3``)."""

from __future__ import annotations

from collections import defaultdict

from scipy.stats import ttest_rel

from mtrbench.analyses.meta.inputs import SystemScores as MetaScores
from mtrbench.analyses.meta.inputs import build_matrix
from mtrbench.leaderboard.ties import ALPHA, rank_groups, system_scores

CONVERSATIONS, TURNS = 6, 3
# per turn: A well above B on every conversation (but by a different margin), C within noise of B
VALUES = {
    "A": lambda c, t: 0.8 - 0.03 * ((c * 7 + t * 3) % 5),
    "B": lambda c, t: 0.3 + 0.02 * ((c + 2 * t) % 4),
    "C": lambda c, t: 0.3 + 0.02 * ((c * 3 + t) % 4),
}


def rows(system: str, recorded: bool) -> list[dict]:
    return [
        {"qid": f"c{c}_{t}", "turn_id": t, "ndcg_at_10": VALUES[system](c, t)}
        | ({"conversation_id": f"c{c}"} if recorded else {})
        for c in range(CONVERSATIONS)
        for t in range(1, TURNS + 1)
    ]


def test_rows_without_conversation_id_rank_as_their_query_ids_name_the_conversations():
    values = {s: sum(r["ndcg_at_10"] for r in rows(s, True)) / (CONVERSATIONS * TURNS) for s in VALUES}
    recorded = rank_groups(values, {s: system_scores(s, rows(s, True)) for s in VALUES}, "ndcg_at_10")
    derived = rank_groups(values, {s: system_scores(s, rows(s, False)) for s in VALUES}, "ndcg_at_10")
    assert derived.tie_aware and derived.labels == recorded.labels
    # by hand: A vs B differs on every conversation mean, B vs C does not (scipy on conversation means)
    means: dict[str, dict[str, list[float]]] = {s: defaultdict(list) for s in VALUES}
    for s in VALUES:
        for row in rows(s, True):
            means[s][row["conversation_id"]].append(row["ndcg_at_10"])
    conv = {s: [sum(v) / len(v) for _, v in sorted(m.items())] for s, m in means.items()}
    assert ttest_rel(conv["A"], conv["B"]).pvalue * 2 < ALPHA < ttest_rel(conv["B"], conv["C"]).pvalue
    assert derived.labels == {"A": "1", "B": "2-3", "C": "2-3"}


def test_leaderboard_and_meta_assign_the_same_conversations():
    mixed = [
        {"qid": "c1_1", "ndcg_at_10": 0.5},  # named by its id
        {"qid": "31-4", "ndcg_at_10": 0.5},  # CAsT exports with a dash
        {"qid": "lonely", "ndcg_at_10": 0.5},  # no turn number: a unit of its own
        {"qid": "x_2", "conversation_id": "recorded", "ndcg_at_10": 0.5},  # the recorded one wins
    ]
    expected = {"c1_1": "c1", "31-4": "31", "lonely": "lonely", "x_2": "recorded"}
    assert dict(system_scores("a", mixed).conversations) == expected
    meta = [
        MetaScores(
            name,
            "t",
            {r["qid"]: r["ndcg_at_10"] for r in mixed},
            {r["qid"]: r["conversation_id"] for r in mixed if "conversation_id" in r},
        )
        for name in ("a", "b")
    ]
    matrix = build_matrix(meta, "ndcg_at_10")
    assert dict(zip(matrix.queries, matrix.conversations)) == expected
