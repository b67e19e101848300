"""Pool analysis over several runs of one task (DREAM App. H).

A run's pool contribution is its top-k per query. With original qrels O and refined qrels R, the
holes a set S of runs uncovers are H(S) = {(q, d) : d in top_k of some run in S, R(q, d) > 0,
d not relevant in O(q)}.

* Growth rate, for an order r_1..r_M: GR(m) = (|H(C_m)| - |H(C_{m-1})|) / |H(C_{m-1})| with
  C_m = {r_1..r_m}; undefined (None) while |H(C_{m-1})| = 0. Averaged over seeded random orders,
  each m over the orders where it is defined.
* Dataset annotated by S: D_S = O plus the refined labels of the documents S pooled.
  Marginal contribution (leave-one-out): MC(r) = |Perf_{D_all}(r) - Perf_{D_{all \\ r}}(r)|; and
  along random orders, MC(m) = mean over orders of |Perf_{D_{C_m + r}}(r) - Perf_{D_{C_m}}(r)| for the
  retriever r = r_{m+1} added next.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from mtrbench.analyses.holes import filled_holes
from mtrbench.formats.qrels import Qrels
from mtrbench.formats.run import Run, ranked
from mtrbench.measures import Measure, evaluate


def pooled(runs: Iterable[Run], k: int) -> set[tuple[str, str]]:
    return {(qid, doc) for run in runs for qid, docs in run.items() for doc, _ in ranked(docs)[:k]}


def holes_found(pool: set[tuple[str, str]], holes: Qrels) -> set[tuple[str, str]]:
    return {(q, d) for q, d in pool if d in holes.get(q, {})}


def annotated_qrels(original: Qrels, refined: Qrels, pool: set[tuple[str, str]]) -> Qrels:
    qrels = {q: dict(docs) for q, docs in original.items()}
    for q, d in pool:
        if d in refined.get(q, {}):
            qrels.setdefault(q, {})[d] = refined[q][d]
    return qrels


@dataclass
class PoolAnalysis:
    names: list[str]
    k: int
    metric: str
    orders: list[list[str]]
    growth_rate: list[float | None]  # index m-1 for m = 1..M
    holes_per_size: list[float]  # mean |H(C_m)|
    marginal_contribution: dict[str, float]  # leave-one-out, per run
    marginal_contribution_by_size: list[float]  # index m-1 for m = 1..M-1
    total_holes: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "runs": self.names,
            "k": self.k,
            "metric": self.metric,
            "orders": self.orders,
            "growth_rate": self.growth_rate,
            "holes_per_pool_size": self.holes_per_size,
            "marginal_contribution": self.marginal_contribution,
            "marginal_contribution_mean": (sum(self.marginal_contribution.values()) / len(self.marginal_contribution)),
            "marginal_contribution_by_pool_size": self.marginal_contribution_by_size,
            "total_holes_found": self.total_holes,
        }


def _perf(run: Run, qrels: Qrels, metric_family: str, k: int, qids: Sequence[str]) -> float:
    scoped = {q: qrels[q] for q in qids if q in qrels}
    measure = Measure(metric_family, k)
    ev = evaluate(scoped, run, [measure])
    return ev.mean()[measure.key(1)]


def pool_analysis(
    runs: dict[str, Run],
    original: Qrels,
    refined: Qrels,
    k: int = 10,
    metric: str = "hit",
    n_orders: int = 10,
    seed: int = 0,
    orders: list[list[str]] | None = None,
) -> PoolAnalysis:
    names = list(runs)
    holes = filled_holes(original, refined)
    qids = [q for q, docs in refined.items() if any(g > 0 for g in docs.values())]
    if orders is None:
        rng = random.Random(seed)
        orders = []
        for _ in range(n_orders):
            order = names[:]
            rng.shuffle(order)
            orders.append(order)

    m_total = len(names)
    gr_sums, gr_counts = [0.0] * m_total, [0] * m_total
    hole_sums = [0.0] * m_total
    mc_sums = [0.0] * max(m_total - 1, 0)
    for order in orders:
        previous = 0
        for m in range(1, m_total + 1):
            pool_m = pooled((runs[n] for n in order[:m]), k)
            found = len(holes_found(pool_m, holes))
            hole_sums[m - 1] += found
            if m > 1 and previous > 0:
                gr_sums[m - 1] += (found - previous) / previous
                gr_counts[m - 1] += 1
            previous = found
            if m < m_total:
                target = order[m]
                with_target = annotated_qrels(original, refined, pooled((runs[n] for n in order[: m + 1]), k))
                without = annotated_qrels(original, refined, pool_m)
                mc_sums[m - 1] += abs(
                    _perf(runs[target], with_target, metric, k, qids) - _perf(runs[target], without, metric, k, qids)
                )

    everything = annotated_qrels(original, refined, pooled(runs.values(), k))
    loo = {}
    for name in names:
        others = annotated_qrels(original, refined, pooled((runs[n] for n in names if n != name), k))
        loo[name] = abs(_perf(runs[name], everything, metric, k, qids) - _perf(runs[name], others, metric, k, qids))
    return PoolAnalysis(
        names=names,
        k=k,
        metric=metric,
        orders=orders,
        growth_rate=[gr_sums[i] / gr_counts[i] if gr_counts[i] else None for i in range(m_total)],
        holes_per_size=[s / len(orders) for s in hole_sums],
        marginal_contribution=loo,
        marginal_contribution_by_size=[s / len(orders) for s in mc_sums],
        total_holes=len(holes_found(pooled(runs.values(), k), holes)),
    )
