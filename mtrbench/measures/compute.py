"""Compute a list of measures on one run: the evaluated queries, their per-query values, aggregates.

Conventions (documented in docs/metrics.md):
* queries with no positive judgment are excluded from every mean and counted;
* a judged query missing from the run (or with no hits) counts with score 0, never silently dropped;
* ties are broken as trec_eval does: score descending, then doc id descending;
* graded relevance: nDCG uses the grades; binary measures count grade >= the relevance level.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mtrbench.formats.generations import Generation
from mtrbench.formats.qrels import Qrels
from mtrbench.formats.run import Run
from mtrbench.infra.errors import MtrbenchError
from mtrbench.measures.base import Computed, Measure, MeasureInputs
from mtrbench.measures.trec_eval import TrecEvalFamily, evaluate_trec


@dataclass
class Evaluation:
    per_query: dict[str, dict[str, float]]  # qid -> result key -> value
    excluded: list[str]  # judged queries without any positive judgment
    metric_keys: list[str]  # keys with per-query values, in the order asked
    aggregates: dict[str, float] = field(default_factory=dict)  # keys with one value per run (hole_beir, RAGAlign)
    relevance_level: int = 1  # the level un-suffixed keys are computed at
    measures: dict[str, Measure] = field(default_factory=dict)  # result key -> measure (level explicit)
    details: dict[str, dict] = field(default_factory=dict)  # result key -> extra facts (RAGAlign's n, p)

    def scores(self) -> dict[str, float]:
        return {**self.mean(), **self.aggregates}

    def mean(self, qids: Iterable[str] | None = None) -> dict[str, float]:
        rows = [self.per_query[q] for q in (self.per_query if qids is None else qids)]
        if not rows:
            return {key: float("nan") for key in self.metric_keys}
        return {key: sum(r[key] for r in rows) / len(rows) for key in self.metric_keys}

    def values(self, key: str) -> dict[str, float]:
        return {qid: row[key] for qid, row in self.per_query.items()}

    def labels(self) -> dict[str, str]:
        return {key: str(m) for key, m in self.measures.items()}


def evaluate(
    qrels: Qrels,
    run: Run,
    measures: Sequence[Measure],
    relevance_level: int = 1,
    generation: Mapping[str, int] | None = None,
    generations: Mapping[str, Generation] | None = None,
    references: Mapping[str, tuple[str, ...]] | None = None,
) -> Evaluation:
    """``relevance_level``: the task's declared minimum grade for binary measures (TREC CAsT: 2); a
    measure with its own ``rel`` is computed at that level and keyed apart. ``generations`` and
    ``references`` (qid -> generated answer, reference answers) feed the generation measures."""
    if relevance_level < 1:
        raise MtrbenchError(f"the relevance level must be a positive integer, got {relevance_level}")
    positives = {qid: docs for qid, docs in qrels.items() if any(g > 0 for g in docs.values())}
    if not positives:
        raise MtrbenchError("no query has a positive judgment: nothing to evaluate")
    inputs = MeasureInputs(
        qrels=positives,
        run={qid: dict(run.get(qid, {})) for qid in positives},
        all_qrels=qrels,
        raw_run=run,
        task_level=relevance_level,
        generation=generation,
        generations=generations,
        references=references,
    )

    asked = list(dict.fromkeys(m.at_level(relevance_level) for m in measures))
    keys: dict[Measure, str] = {}
    for m in asked:
        key = m.key(relevance_level)
        if key in keys.values() and keys.get(m) != key:
            raise MtrbenchError(f"measures {m} and {next(x for x, k in keys.items() if k == key)} share the key {key}")
        keys[m] = key
    needed = [r.at_level(relevance_level) for m in asked for r in m.spec.requires(m)]
    first = list(dict.fromkeys([*asked, *needed]))
    first = [m for m in first if not m.spec.requires(m)]
    computed = _compute(first, inputs, Computed())
    later = [m for m in asked if m.spec.requires(m)]
    computed = _compute(later, inputs, computed)

    per_query: dict[str, dict[str, float]] = {qid: {} for qid in positives}
    metric_keys, aggregates, details = [], {}, {}
    for m in asked:
        key = keys[m]
        if m in computed.per_query:
            metric_keys.append(key)
            for qid, value in computed.per_query[m].items():
                per_query[qid][key] = value
        else:
            aggregates[key] = computed.aggregate[m]
        if m in computed.details:
            details[key] = computed.details[m]
    return Evaluation(
        per_query=per_query,
        excluded=sorted(set(qrels) - set(positives)),
        metric_keys=metric_keys,
        aggregates=aggregates,
        relevance_level=relevance_level,
        measures={keys[m]: m for m in asked},
        details=details,
    )


def _compute(measures: Sequence[Measure], inputs: MeasureInputs, computed: Computed) -> Computed:
    trec = [m for m in measures if isinstance(m.spec, TrecEvalFamily)]
    if trec:
        _merge(computed, evaluate_trec(trec, inputs))
    by_family: dict[str, list[Measure]] = {}
    for m in measures:
        if not isinstance(m.spec, TrecEvalFamily):
            by_family.setdefault(m.family, []).append(m)
    for _name, group in by_family.items():
        _merge(computed, group[0].spec.compute(group, inputs, computed))
    return computed


def _merge(into: Computed, part: Computed) -> None:
    into.per_query.update(part.per_query)
    into.aggregate.update(part.aggregate)
    into.details.update(part.details)


def zero_filled(scored: Evaluation, qids: Iterable[str]) -> dict[str, dict[str, float]]:
    """``scored``'s per-query values for ``qids``, every measure 0 for a query it left out: the official protocols
    that count a query without a relevant document (or missing from the run) as 0 score only the others, then this."""
    zeros = {key: 0.0 for key in scored.metric_keys}
    return {qid: scored.per_query.get(qid, dict(zeros)) for qid in qids}
