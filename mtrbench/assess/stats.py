"""Assessment statistics in the spirit of the seed's Table 8: pool, pre-filter, consensus per round,
escalations, and the relevant documents the assessment found."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from mtrbench.assess.log import PairRecords
from mtrbench.assess.refine import new_judgment
from mtrbench.formats.qrels import Qrels

ROUND_COUNTS = ("debated", "consensus", "consensus_relevant", "consensus_not_relevant", "disagreement")
ESCALATION_COUNTS = (
    "escalated",
    "adjudicated",
    "adjudicated_relevant",
    "adjudicated_not_relevant",
    "adjudication_failed",
    "human_labelled",
    "awaiting_human",
)


def assessment_stats(
    pool: dict[str, Any] | None, records: Iterable[PairRecords], original: Qrels, relevant_grade: int, max_rounds: int
) -> dict[str, Any]:
    records = list(records)
    prefilter = _prefilter_counts(records)
    debate, rounds = _debate_counts(records)
    escalation = _escalation_counts(records)
    labels, new_relevant = _label_counts(records, original, relevant_grade)
    failed = debate["failed"] + prefilter["failed"] + escalation["adjudication_failed"]
    return {
        "pool": pool,
        "pairs_in_log_or_pool": len(records),
        "prefilter": {k: prefilter[k] for k in ("judged", "kept", "discarded", "failed")} if prefilter else None,
        "debate": {
            "max_rounds": max_rounds,
            "debated": debate["consensus"] + debate["disagreement"],
            "rounds": [{"round": n, **{k: rounds[n][k] for k in ROUND_COUNTS}} for n in sorted(rounds)],
            "consensus": debate["consensus"],
            "failed": debate["failed"],
        },
        "escalation": {k: escalation[k] for k in ESCALATION_COUNTS},
        "failed_pairs": failed,
        "not_yet_assessed": labels["not_yet_assessed"],
        "new_judgments": labels["new_judgments"],
        "relevant_found": labels["relevant_found"],
        "relevant_found_by": {s: labels[f"relevant_by_{s}"] for s in ("consensus", "adjudicator", "human")},
        "queries_with_new_relevant": len(new_relevant),
        "new_relevant_per_query": dict(sorted(new_relevant.items())),
        "relevant_grade": relevant_grade,
    }


def _prefilter_counts(records: list[PairRecords]) -> Counter:
    """Pairs the prefilter judged, by status (kept, discarded, failed)."""
    prefilter: Counter = Counter()
    for entry in records:
        if entry.prefilter is not None:
            prefilter["judged"] += 1
            prefilter[entry.prefilter["status"]] += 1
    return prefilter


def _debate_counts(records: list[PairRecords]) -> tuple[Counter, dict[int, Counter]]:
    """Debates by status, and per round (1-based) of the debates that did not fail: how many reached it and how
    it ended (consensus, relevant or not, or disagreement)."""
    debate: Counter = Counter()
    rounds: dict[int, Counter] = {}
    for entry in records:
        if entry.debate is None:
            continue
        status = entry.debate["status"]
        debate[status] += 1
        if status == "failed":
            continue
        for n, _rnd in enumerate(entry.debate["rounds"], 1):
            c = rounds.setdefault(n, Counter())
            c["debated"] += 1
            if entry.debate["consensus_round"] == n:
                c["consensus"] += 1
                c["consensus_relevant" if entry.debate["label"] else "consensus_not_relevant"] += 1
            else:
                c["disagreement"] += 1
    return debate, rounds


def _escalation_counts(records: list[PairRecords]) -> Counter:
    """Escalated pairs: adjudicated (and how), failed adjudications, human labels and those awaiting one."""
    escalation: Counter = Counter()
    for entry in records:
        if not entry.escalated:
            continue
        escalation["escalated"] += 1
        if entry.adjudication is not None:
            if entry.adjudication["status"] == "ok":
                escalation["adjudicated"] += 1
                escalation["adjudicated_relevant" if entry.adjudication["label"] else "adjudicated_not_relevant"] += 1
            else:
                escalation["adjudication_failed"] += 1
        if entry.human is not None:
            escalation["human_labelled"] += 1
        elif entry.final_label()[0] is None:
            escalation["awaiting_human"] += 1
    return escalation


def _label_counts(records: list[PairRecords], original: Qrels, relevant_grade: int) -> tuple[Counter, Counter]:
    """New judgments (pairs the task did not judge, settled), the relevant ones by source, the pairs still open
    with no failure; and the new relevant documents per query."""
    labels: Counter = Counter()
    new_relevant: Counter = Counter()
    for entry in records:
        judged = None if entry.doc_id in original.get(entry.qid, {}) else new_judgment(entry, relevant_grade)
        if judged is None:
            if (
                entry.final_label()[0] is None
                and not entry.escalated
                and not (entry.debate or {}).get("status") == "failed"
                and not (entry.prefilter or {}).get("status") == "failed"
            ):
                labels["not_yet_assessed"] += 1
            continue
        grade, source = judged
        labels["new_judgments"] += 1
        if grade > 0:
            labels["relevant_found"] += 1
            labels[f"relevant_by_{source}"] += 1
            new_relevant[entry.qid] += 1
    return labels, new_relevant


def stats_table(stats: dict[str, Any], title: str):
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("stage")
    table.add_column("pairs", justify="right")
    pool = stats["pool"]
    if pool:
        table.add_row(f"pooled (top-{pool['depth']} of {len(pool['runs'])} runs)", str(pool["pooled_pairs"]))
        table.add_row("  already judged in the task (kept, not re-assessed)", str(pool["already_judged"]))
        table.add_row("  candidate pairs to assess", str(pool["to_assess"]))
    if stats["prefilter"]:
        pf = stats["prefilter"]
        table.add_row(
            "after pre-filter (kept / discarded / failed)", f"{pf['kept']} / {pf['discarded']} / {pf['failed']}"
        )
    for rnd in stats["debate"]["rounds"]:
        table.add_row(
            f"debate round {rnd['round']}: consensus (yes / no)",
            f"{rnd['consensus']} ({rnd['consensus_relevant']} / {rnd['consensus_not_relevant']})",
        )
        table.add_row(f"debate round {rnd['round']}: disagreement", str(rnd["disagreement"]))
    esc = stats["escalation"]
    table.add_row("escalated (disagreement after the last round)", str(esc["escalated"]))
    if esc["adjudicated"] or esc["adjudication_failed"]:
        table.add_row(
            "  settled by the adjudicator (yes / no)",
            f"{esc['adjudicated']} ({esc['adjudicated_relevant']} / {esc['adjudicated_not_relevant']})",
        )
    table.add_row("  labelled by humans / awaiting a human label", f"{esc['human_labelled']} / {esc['awaiting_human']}")
    table.add_row("failed (retried on the next run)", str(stats["failed_pairs"]))
    if stats["not_yet_assessed"]:
        table.add_row("not yet assessed", str(stats["not_yet_assessed"]))
    table.add_row("new judgments in the refined qrels", str(stats["new_judgments"]))
    table.add_row(
        f"relevant found (grade {stats['relevant_grade']}) / queries with new relevant",
        f"{stats['relevant_found']} / {stats['queries_with_new_relevant']}",
    )
    return table
