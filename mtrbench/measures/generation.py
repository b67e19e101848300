"""What the generation measures share (families ``bleu``, ``rouge_l``, ``cit_recall``, ``cit_precision``,
``token_f1``, ``exact_match``): a family without a cutoff, computed per turn from the turn's generated
answer (:class:`mtrbench.formats.generations.Generation`) and the task's reference answers or gold passages.

Text conventions (docs/metrics.md):
* citation marks ``[3]``, ``[1, 2]`` are removed from answers and references before any text comparison
  (CORAL's reference responses carry ``[pid]`` marks, a generator's answer ``[n]`` labels);
* several references: the best-matching one counts (max), as SQuAD does for F1/EM and rouge-score's
  ``score_multi`` for ROUGE-L; sacrebleu takes all references at once for BLEU.
"""

from __future__ import annotations

import re
from abc import abstractmethod
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mtrbench.infra.errors import MtrbenchError
from mtrbench.measures.base import Computed, Measure, MeasureFamily, MeasureInputs

CITATION_MARK = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LEADING_MARKS = re.compile(r"^(?:\s*\[\s*\d+(?:\s*,\s*\d+)*\s*\])+")


def strip_citations(text: str) -> str:
    return " ".join(CITATION_MARK.sub(" ", text).split())


def citation_labels(text: str) -> list[int]:
    """Every label cited, in order of appearance (``[1, 2]`` gives 1 and 2)."""
    return [int(n) for group in CITATION_MARK.findall(text) for n in group.split(",")]


def squad_normalize(text: str) -> str:
    """SQuAD v1.1 answer normalization: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def statements(answer: str) -> list[str]:
    """The answer cut into sentences (ALCE's statements); citation marks written after a sentence's final
    punctuation ("... end. [2] Next ...") belong to that sentence."""
    parts = [p for p in _SENTENCE_END.split(answer.strip()) if p.strip()]
    out: list[str] = []
    for part in parts:
        lead = _LEADING_MARKS.match(part)
        if lead and out:
            out[-1] = f"{out[-1]} {lead.group(0).strip()}"
            part = part[lead.end():]
        if part.strip():
            out.append(part.strip())
    return out


@dataclass(frozen=True)
class TurnText:
    """One evaluated turn as the generation measures see it."""

    answer: str
    references: tuple[str, ...]
    passages: tuple[str, ...]


class GenerationFamily(MeasureFamily):
    """A per-turn generation measure: no cutoff, no relevance level unless it reads gold passages."""

    takes_cutoff = False
    needs_references = True  # False: computed from gold passages (citation measures)

    def check(self, measure: Measure, where: str) -> None:
        if measure.cutoff is not None:
            raise MtrbenchError(f"{where}: {self.label} takes no cutoff (write {self.label})")
        if measure.rel is not None and not self.uses_relevance_level:
            raise MtrbenchError(f"{where}: {self.label} takes no relevance level")
        if measure.rel is not None and measure.rel < 1:
            raise MtrbenchError(f"{where}: rel must be a positive integer")
        if measure.params:
            raise MtrbenchError(f"{where}: {self.label} takes no parameter '{measure.params[0][0]}'")

    def example(self) -> Measure:
        return Measure(self.name)

    def format(self, measure: Measure) -> str:
        return self.label + (f"(rel={measure.rel})" if measure.rel is not None else "")

    def key(self, measure: Measure, task_level: int) -> str:
        key = self.key_stem
        if measure.rel is not None and measure.rel != task_level:
            key += f"_rel{measure.rel}"
        return key

    def key_pattern(self) -> re.Pattern:
        return re.compile(rf"{re.escape(self.key_stem)}(?:_rel(?P<rel>\d+))?")

    def from_key(self, match: re.Match) -> Measure:
        rel = match.group("rel")
        return Measure(self.name, None, int(rel) if rel else None)

    @abstractmethod
    def turn_value(self, turn: TurnText, gold: set[str]) -> float:
        """This family's value for one generated turn (``gold``: the turn's gold passage ids)."""

    def compute(self, measures: Sequence[Measure], inputs: MeasureInputs, computed: Computed) -> Computed:
        turns = turn_texts(inputs, self)
        out = Computed()
        for m in measures:
            level = m.rel if m.rel is not None else inputs.task_level
            out.per_query[m] = {qid: self.turn_value(turns[qid], {d for d, g in inputs.qrels[qid].items()
                                                                  if g >= level})
                                for qid in inputs.qrels}
        return out


def turn_texts(inputs: MeasureInputs, family: GenerationFamily) -> dict[str, TurnText]:
    generations: Mapping = inputs.generations or {}
    references: Mapping[str, tuple[str, ...]] = inputs.references or {}
    if inputs.generations is None:
        raise MtrbenchError(f"{family.label} needs generated answers (mtrbench judge GENERATIONS.jsonl)")
    missing = [q for q in inputs.qrels if q not in generations]
    if missing:
        raise MtrbenchError(f"{family.label}: {len(missing)} evaluated queries have no generation, e.g. {missing[0]}")
    if family.needs_references:
        unreferenced = [q for q in inputs.qrels if not references.get(q)]
        if unreferenced:
            raise MtrbenchError(f"{family.label}: {len(unreferenced)} evaluated queries have no reference answer, "
                                f"e.g. {unreferenced[0]}")
    return {q: TurnText(answer=generations[q].answer, references=tuple(references.get(q, ())),
                        passages=tuple(generations[q].passages)) for q in inputs.qrels}


def cited_documents(statement: str, passages: Sequence[str]) -> list[str | None]:
    """The documents a statement cites, one per distinct label in order; None for a label that names no
    passage shown (0, or beyond the list)."""
    labels = list(dict.fromkeys(citation_labels(statement)))
    return [passages[n - 1] if 1 <= n <= len(passages) else None for n in labels]
