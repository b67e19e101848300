"""Ranking metrics computed by pytrec_eval (trec_eval's own C code).

Conventions, chosen deliberately and documented in the README:
* queries with no positive judgment are excluded from every mean and counted;
* a judged query missing from the run (or with no hits) counts with score 0 (never silently dropped);
* ties are broken as trec_eval does: score descending, then doc id descending;
* graded relevance: nDCG uses the grades; binary measures count grade >= 1 as relevant;
* Recall@k is trec_eval's ``recall_k`` (found / all relevant, not capped at k);
* MRR@k is trec_eval's ``recip_rank`` on each ranking cut to its top k (trec_eval itself has no cut).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pytrec_eval

from mtrbench.errors import MtrbenchError, unknown_name
from mtrbench.formats.qrels import Qrels
from mtrbench.formats.run import Run, ranked


@dataclass(frozen=True)
class MetricFamily:
    name: str
    pretty: str
    trec_measure: str  # pytrec_eval measure; "{k}" is replaced by the cutoff list
    trec_key: str  # per-query result key; "{k}" replaced by one cutoff


FAMILIES: dict[str, MetricFamily] = {f.name: f for f in (
    MetricFamily("ndcg", "nDCG", "ndcg_cut.{k}", "ndcg_cut_{k}"),
    MetricFamily("recall", "Recall", "recall.{k}", "recall_{k}"),
    MetricFamily("mrr", "MRR", "recip_rank", "recip_rank"),
    MetricFamily("map", "MAP", "map_cut.{k}", "map_cut_{k}"),
    MetricFamily("precision", "P", "P.{k}", "P_{k}"),
    MetricFamily("hit", "Hit", "success.{k}", "success_{k}"),
)}
# Beyond trec_eval (mtrbench.metrics.holes): per-query unjudged share, and BEIR's global Hole@k.
EXTRA_FAMILIES = {"hole_unjudged": "Hole-unjudged", "hole_beir": "Hole-BEIR"}
# Names in result files follow mteb's keys so its tooling reads them.
RESULT_KEY = {"ndcg": "ndcg_at_{k}", "recall": "recall_at_{k}", "mrr": "mrr_at_{k}", "map": "map_at_{k}",
              "precision": "precision_at_{k}", "hit": "hit_rate_at_{k}",
              "hole_unjudged": "hole_unjudged_at_{k}", "hole_beir": "hole_beir_at_{k}"}
PRETTY = {**{name: f.pretty for name, f in FAMILIES.items()}, **EXTRA_FAMILIES}


def metric_key(family: str, k: int) -> str:
    return RESULT_KEY[family].format(k=k)


def pretty_name(key: str) -> str:
    """``ndcg_at_10`` -> ``nDCG@10``."""
    for family, pattern in RESULT_KEY.items():
        prefix = pattern.split("{k}")[0]
        if key.startswith(prefix) and key[len(prefix):].isdigit():
            return f"{PRETTY[family]}@{key[len(prefix):]}"
    return key


def parse_families(names: Iterable[str]) -> list[str]:
    out = []
    for name in names:
        name = name.strip().lower()
        if not name:
            continue
        if name not in RESULT_KEY:
            raise unknown_name("metric", name, RESULT_KEY)
        out.append(name)
    return out


def parse_k_values(text: str | Sequence[int]) -> list[int]:
    values = text.split(",") if isinstance(text, str) else list(text)
    try:
        ks = sorted({int(v) for v in values if str(v).strip()})
    except ValueError:
        raise MtrbenchError(f"k values must be positive integers, got '{text}'") from None
    if not ks or ks[0] < 1:
        raise MtrbenchError(f"k values must be positive integers, got '{text}'")
    return ks


def cut_run(run: Run, k: int) -> Run:
    return {qid: dict(ranked(docs)[:k]) for qid, docs in run.items()}


@dataclass
class Evaluation:
    per_query: dict[str, dict[str, float]]  # qid -> metric key -> value
    excluded: list[str]  # judged queries without any positive judgment
    metric_keys: list[str]  # per-query metrics
    aggregates: dict[str, float] = field(default_factory=dict)  # metrics with no per-query value (hole_beir)

    def scores(self) -> dict[str, float]:
        return {**self.mean(), **self.aggregates}

    def mean(self, qids: Iterable[str] | None = None) -> dict[str, float]:
        rows = [self.per_query[q] for q in (self.per_query if qids is None else qids)]
        if not rows:
            return {key: float("nan") for key in self.metric_keys}
        return {key: sum(r[key] for r in rows) / len(rows) for key in self.metric_keys}


def evaluate(qrels: Qrels, run: Run, k_values: Sequence[int], families: Sequence[str],
             relevance_level: int = 1) -> Evaluation:
    """``relevance_level``: the minimum grade binary measures count as relevant (TREC CAsT uses 2)."""
    positives = {qid: docs for qid, docs in qrels.items() if any(g > 0 for g in docs.values())}
    excluded = sorted(set(qrels) - set(positives))
    if not positives:
        raise MtrbenchError("no query has a positive judgment: nothing to evaluate")
    full_run = {qid: dict(run.get(qid, {})) for qid in positives}  # missing queries score 0
    per_query: dict[str, dict[str, float]] = {qid: {} for qid in positives}
    keys: list[str] = []

    cut_families = [FAMILIES[f] for f in families if f in FAMILIES and f != "mrr"]
    if cut_families:
        measures = {f.trec_measure.format(k=",".join(map(str, k_values))) for f in cut_families}
        # pytrec_eval wants "ndcg_cut.1,3,5"; recall/P/success also take comma lists
        scores = pytrec_eval.RelevanceEvaluator(positives, measures, relevance_level=relevance_level).evaluate(full_run)
        for family in cut_families:
            for k in k_values:
                key = metric_key(family.name, k)
                keys.append(key)
                for qid in positives:
                    per_query[qid][key] = scores[qid][family.trec_key.format(k=k)]
    if "mrr" in families:
        evaluator = pytrec_eval.RelevanceEvaluator(positives, {"recip_rank"}, relevance_level=relevance_level)
        for k in k_values:
            key = metric_key("mrr", k)
            keys.append(key)
            scores = evaluator.evaluate(cut_run(full_run, k))
            for qid in positives:
                per_query[qid][key] = scores[qid]["recip_rank"]
    aggregates: dict[str, float] = {}
    if "hole_unjudged" in families:
        from mtrbench.metrics.holes import hole_unjudged

        for qid, values in hole_unjudged(positives, full_run, k_values).items():
            per_query[qid].update(values)
        keys.extend(metric_key("hole_unjudged", k) for k in k_values)
    if "hole_beir" in families:
        from mtrbench.metrics.holes import hole_beir

        aggregates = hole_beir(qrels, run, k_values)  # BEIR counts every run query
    order = {key: i for i, key in enumerate(_ordered_keys(families, k_values))}
    keys.sort(key=order.__getitem__)
    return Evaluation(per_query=per_query, excluded=excluded, metric_keys=keys, aggregates=aggregates)


def _ordered_keys(families: Sequence[str], k_values: Sequence[int]) -> list[str]:
    return [metric_key(f, k) for f in families for k in k_values]
