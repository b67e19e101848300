"""Ranks that respect ties: neighbouring systems whose difference is not significant share a rank group.

Within one ranked list (the entries of one task in one comparable group, best main score first), each
ADJACENT pair is tested with the paired test ``mtrbench compare`` runs (analyses/compare_many.py): a paired
t-test on the conversations' means of the main score (each system's mean over the conversation's turns;
only queries every system has are compared). The n-1 adjacent p-values are one family, Holm-adjusted.

How rank groups form: walk the list from the top; a group starts at a system and extends to the next one
while that adjacent pair is tied (Holm-adjusted p >= alpha, or no test possible because every conversation's
difference is zero). The first significant adjacent difference closes the group. A group covering positions
i..j is shown as ``i-j`` on each of its rows, a group of one as ``i``. Being tied is not transitive: a
chain can join a system A to C through B although A and C would differ significantly if tested; the group
says only that no significant step separates its neighbours.

Only a system ranked 1 alone is marked best (green on the page): its label is ``1`` and no other system of
its list has ``1`` (``alone_first``). A top group ``1-2`` has no best system, nor has a plain ranking whose
two top scores are equal (both ``1``): the data does not single one out.

A ranked list where some system has no per-query scores (no matching result file given) keeps plain ranks
(competition ranks: equal scores share the better rank) and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mtrbench.analyses.compare_many import CompareOptions, SystemScores, compared_units, paired_tests
from mtrbench.analyses.meta.inputs import query_conversation
from mtrbench.infra.errors import UserInputError
from mtrbench.leaderboard.build import competition_ranks
from mtrbench.leaderboard.metric_names import metric_name

ALPHA = 0.05
TEST = "t"
UNIT = "conversation"


@dataclass(frozen=True)
class RankGroups:
    """The rank shown for each system of one ranked list, and the one sentence that says how it was made."""

    labels: dict[str, str]  # system key -> "2" or "1-3"
    first: dict[str, int]  # system key -> the group's first position (to sort by)
    tie_aware: bool
    note: str


def method_note(metric: str, alpha: float = ALPHA) -> str:
    return (
        f"tied ranks (e.g. 1-3): adjacent systems not significantly different on {metric_name(metric)} "
        f"(paired t-test on conversation means, Holm over the adjacent pairs, alpha {alpha:g})"
    )


def alone_first(labels: Mapping[str, str]) -> str | None:
    """The key ranked ``1`` alone in ``labels`` (key -> rank label, tie-aware ``1-2`` or plain), else None: the
    one system a table may mark best."""
    firsts = [key for key, label in labels.items() if label == "1"]
    return firsts[0] if len(firsts) == 1 else None


def plain_ranks(values: Mapping[str, float], reason: str) -> RankGroups:
    ranks = competition_ranks(dict(values))
    return RankGroups({k: str(r) for k, r in ranks.items()}, dict(ranks), False, f"plain ranks: {reason}")


def chain_groups(order: Sequence[str], tied: Sequence[bool]) -> dict[str, tuple[int, int]]:
    """system -> (first, last) position (from 1) of its rank group; ``tied[i]`` says whether order[i] and
    order[i + 1] are tied."""
    spans: dict[str, tuple[int, int]] = {}
    start = 0
    for position in range(len(order)):
        closes = position == len(order) - 1 or not tied[position]
        if closes:
            for member in order[start : position + 1]:
                spans[member] = (start + 1, position + 1)
            start = position + 1
    return spans


def adjacent_ties(order: Sequence[str], scores: Mapping[str, SystemScores], metric: str, alpha: float) -> list[bool]:
    """Whether each adjacent pair of ``order`` is tied (Holm-adjusted p >= alpha over the adjacent pairs)."""
    systems = [scores[key] for key in order]
    options = CompareOptions(measures=(metric,), baseline=None, test=TEST, unit=UNIT, alpha=alpha)
    _, units = compared_units(systems, options)
    pairs = [(i, i + 1) for i in range(len(systems) - 1)]
    tests = paired_tests(systems, units, pairs, options)
    return [t.p_holm >= alpha if t.p_holm is not None else t.diff == 0 for t in tests]


def rank_groups(
    values: Mapping[str, float],
    scores: Mapping[str, SystemScores] | None,
    metric: str,
    alpha: float = ALPHA,
) -> RankGroups:
    """Tie-aware rank groups of ``values`` (system -> main score) when ``scores`` holds every system's
    per-query values, else plain ranks with the reason."""
    if len(values) < 2:
        return plain_ranks(values, "a single system")
    missing = [key for key in values if not scores or key not in scores]
    if missing:
        return plain_ranks(values, f"no per-query scores for {len(missing)} of the {len(values)} systems")
    assert scores is not None
    order = sorted(values, key=lambda key: (-values[key], key))
    try:
        tied = adjacent_ties(order, scores, metric, alpha)
    except UserInputError as exc:  # no shared queries, fewer than two conversations, a measure missing
        return plain_ranks(values, f"no paired test possible ({exc})")
    spans = chain_groups(order, tied)
    labels = {key: str(a) if a == b else f"{a}-{b}" for key, (a, b) in spans.items()}
    return RankGroups(labels, {key: a for key, (a, _) in spans.items()}, True, method_note(metric, alpha))


def system_scores(name: str, rows: Sequence[Mapping[str, Any]]) -> SystemScores:
    """Per-query rows as a result's per-query file holds them (qid, conversation_id, metrics) -> SystemScores;
    each query's conversation by the rule meta-analyses use (``query_conversation``): a row without
    ``conversation_id`` gets the one its query id names (``31_4`` -> ``31``)."""
    per_query = {
        str(row["qid"]): {k: float(v) for k, v in row.items() if isinstance(v, (int, float)) and k != "turn_id"}
        for row in rows
        if row.get("qid") is not None
    }
    conversations = {
        str(row["qid"]): query_conversation(str(row["qid"]), row.get("conversation_id"))
        for row in rows
        if row.get("qid") is not None
    }
    return SystemScores(name, per_query, conversations)


# (group id, task) -> the rank groups of that task's entries in that group, keyed by entry id
GroupRanks = dict[tuple[str, str], RankGroups]


def group_rank_groups(
    groups: Sequence[Mapping[str, Any]],
    entries: Sequence[Mapping[str, Any]],
    scores: Mapping[str, SystemScores] | None,
) -> GroupRanks:
    """Rank groups of every task of every comparable group by its main score (entry id -> per-query scores in
    ``scores``; plain ranks where an entry has none)."""
    by_id = {e["id"]: e for e in entries}
    ranked: GroupRanks = {}
    for group in groups:
        for task in group["tasks"]:
            main = group["main_scores"][task]
            values = {
                i: by_id[i]["scores"][main]
                for i in group["entries"]
                if by_id[i]["task"] == task and main in by_id[i]["scores"]
            }
            ranked[(group["id"], task)] = rank_groups(values, scores, main)
    return ranked
