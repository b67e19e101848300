"""RAGAlign (DREAM §5.2, App. J.3): does retrieval success line up with generation success?

Binary: RAGAlign@k = (1/N) sum_i 1[R_i == G_i] for a binary retrieval outcome R (Hit@k by default)
and a binary generation outcome G per query, over the N queries that have both. Graded R (e.g.
nDCG@k): the point-biserial correlation between R and G, with its p-value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mtrbench.infra.errors import MtrbenchError
from mtrbench.measures.base import Computed, Measure, MeasureFamily, MeasureInputs, all_families, family

UNDEFINED = "undefined: the retrieval values or the verdicts are constant over these turns"


@dataclass
class RagAlign:
    metric: str
    value: float  # agreement rate (binary) or point-biserial r; NaN where undefined (``note`` says why)
    n: int
    p_value: float | None = None
    missing_generation: int = 0  # evaluated queries without a generation judgment (left out)
    note: str | None = None

    def as_dict(self) -> dict:
        """JSON-ready: an undefined value is None with its note, never NaN."""
        defined = not math.isnan(self.value)
        return {
            "metric": self.metric,
            "value": self.value if defined else None,
            "n": self.n,
            "p_value": self.p_value if defined else None,
            "missing_generation": self.missing_generation,
            **({"note": self.note or UNDEFINED} if not defined or self.note else {}),
        }


def _paired(retrieval: dict[str, float], generation: dict[str, int]):
    qids = [q for q in retrieval if q in generation]
    return qids, len(retrieval) - len(qids)


def ragalign_binary(retrieval: dict[str, float], generation: dict[str, int], metric: str) -> RagAlign:
    qids, missing = _paired(retrieval, generation)
    if not qids:
        raise MtrbenchError("RAGAlign: no evaluated query has a generation judgment")
    for q in qids:
        if retrieval[q] not in (0, 1, 0.0, 1.0):
            raise MtrbenchError(f"RAGAlign binary needs a binary retrieval metric; {metric} is {retrieval[q]} for {q}")
    agree = sum(1 for q in qids if int(retrieval[q]) == generation[q])
    return RagAlign(metric=metric, value=agree / len(qids), n=len(qids), missing_generation=missing)


def ragalign_pointbiserial(retrieval: dict[str, float], generation: dict[str, int], metric: str) -> RagAlign:
    from scipy import stats

    qids, missing = _paired(retrieval, generation)
    if not qids:
        raise MtrbenchError("RAGAlign: no evaluated query has a generation judgment")
    labels = [generation[q] for q in qids]
    values = [retrieval[q] for q in qids]
    if len(set(labels)) < 2 or len(set(values)) < 2:  # a correlation with a constant is undefined
        return RagAlign(metric=metric, value=math.nan, n=len(qids), missing_generation=missing, note=UNDEFINED)
    result = stats.pointbiserialr(labels, values)
    return RagAlign(
        metric=metric,
        value=float(result.statistic),
        n=len(qids),
        p_value=float(result.pvalue),
        missing_generation=missing,
    )


class RAGAlign(MeasureFamily):
    """Retrieval outcome ``of`` (Hit by default) at cutoff k against a binary generation outcome per
    query. A binary ``of`` gives the agreement rate; any other the point-biserial correlation."""

    name, label, key_stem, order = "ragalign", "RAGAlign", "ragalign", 90
    per_query = False
    uses_relevance_level = True
    param_names = ("of",)
    definition = (
        "agreement of retrieval and generation success: share of queries where Hit@k equals the "
        "binary generation verdict; with of=nDCG (or another graded measure), the point-biserial r"
    )
    citation = (
        "Ban et al., Completing Missing Annotation: Multi-Agent Debate for Accurate and Scalable Relevance "
        "Assessment for IR Benchmarks (DREAM, BRIDGE), ICLR 2026, §5.2, App. J.3"
    )

    def defaults(self, measure: Measure) -> Measure:
        """``of`` spelled as its family's label, so RAGAlign@10(of=ndcg) and (of=nDCG) are one value."""
        spec = family(measure.param("of", "Hit"))
        return Measure(measure.family, measure.cutoff, measure.rel, (("of", spec.label),))

    def check(self, measure: Measure, where: str) -> None:
        super().check(measure, where)
        inner = self._inner(measure, where)
        if not inner.spec.per_query or inner.spec.name == self.name:
            raise MtrbenchError(f"{where}: of= must be a per-query retrieval measure, e.g. Hit or nDCG")

    def _inner(self, measure: Measure, where: str = "RAGAlign") -> Measure:
        spec = family(measure.param("of", "Hit"))
        rel = measure.rel if spec.uses_relevance_level else None
        return Measure(spec.name, measure.cutoff, rel)

    def format(self, measure: Measure) -> str:
        inner = self._inner(measure)
        shown = Measure(
            measure.family, measure.cutoff, measure.rel, () if inner.family == "hit" else (("of", inner.spec.label),)
        )
        return super().format(shown)

    def key(self, measure: Measure, task_level: int) -> str:
        inner = self._inner(measure)
        stem = self.key_stem if inner.family == "hit" else f"{self.key_stem}_{inner.spec.key_stem}"
        key = f"{stem}_at_{measure.cutoff}"
        if measure.rel is not None and measure.rel != task_level and inner.spec.uses_relevance_level:
            key += f"_rel{measure.rel}"
        return key

    def key_pattern(self) -> re.Pattern:
        return re.compile(r"ragalign(?:_(?P<of>[a-z_]+?))?_at_(?P<cutoff>[0-9]+)(?:_rel(?P<rel>[0-9]+))?")

    def from_key(self, match) -> Measure:
        of = "Hit"
        if match.group("of"):
            of = next((f.label for f in all_families().values() if f.key_stem == match.group("of")), match.group("of"))
        rel = match.group("rel")
        return Measure(self.name, int(match.group("cutoff")), int(rel) if rel else None, (("of", of),))

    def requires(self, measure: Measure) -> Sequence[Measure]:
        return [self._inner(measure)]

    def compute(self, measures: Sequence[Measure], inputs: MeasureInputs, computed: Computed) -> Computed:
        if inputs.generation is None:
            raise MtrbenchError("RAGAlign needs generation verdicts (--generation-judgments)")
        out = Computed()
        for m in measures:
            inner = self._inner(m)
            values = computed.per_query[inner]
            label = str(inner)
            result = (ragalign_binary if inner.family == "hit" else ragalign_pointbiserial)(
                values, dict(inputs.generation), label
            )
            out.aggregate[m] = result.value
            out.details[m] = result.as_dict()
        return out


FAMILY = RAGAlign()
