"""What the generation measures share (families ``bleu``, ``rouge_l``, ``cit_recall``, ``cit_precision``,
``token_f1``, ``exact_match``): a family without a cutoff, computed per turn from the turn's generated
answer (:class:`mtrbench.formats.generations.Generation`) and the task's reference answers or gold passages.

Text conventions (docs/metrics.md):
* citation marks ``[3]``, ``[1, 2]`` are removed from answers and references before any text comparison
  (CORAL's reference responses carry ``[pid]`` marks, a generator's answer ``[n]`` labels);
* several references: the best-matching one counts (max), as SQuAD does for F1/EM and rouge-score's
  ``score_multi`` for ROUGE-L; sacrebleu takes all references at once for BLEU;
* every value lies in [0, 1]: floating-point overshoot (sacrebleu's BLEU-1 of an identical answer is
  1.0000000000000004) is clipped, anything further out is a bug and raises (:func:`unit_interval`).
"""

from __future__ import annotations

import re
import string
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from mtrbench.infra.errors import MtrbenchError
from mtrbench.measures.base import Computed, Measure, MeasureFamily, MeasureInputs

CITATION_MARK = re.compile(r"\[\s*([0-9]+(?:\s*,\s*[0-9]+)*)\s*\]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)
_LEADING_MARKS = re.compile(r"^(?:\s*\[\s*[0-9]+(?:\s*,\s*[0-9]+)*\s*\])+")


def strip_citations(text: str) -> str:
    return " ".join(CITATION_MARK.sub(" ", text).split())


def citation_labels(text: str) -> list[int]:
    """Every label cited, in order of appearance (``[1, 2]`` gives 1 and 2)."""
    return [int(n) for group in CITATION_MARK.findall(text) for n in group.split(",")]


def squad_normalize(text: str) -> str:
    """SQuAD v1.1 answer normalization: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


# English abbreviations, written as Punkt stores them (lower case, no final period: "u.s" for "U.S."), that
# a period does not end a sentence after. ALCE splits answers into statements with NLTK's sent_tokenize,
# i.e. Punkt with its English model; that model (nltk_data's punkt_tab) is a separate download, absent
# offline and on CI, and results must not depend on whether a machine has it. So mtrbench runs the same
# Punkt algorithm (nltk's PunktSentenceTokenizer) with these parameters built in: the common abbreviations
# of English prose (titles, Latin, corporate, months, units, places). Initials ("J. R. R. Tolkien") and
# decimals ("3.5") need no entry: Punkt keeps them by its own rules. Words that often end a sentence
# ("no", "sun", "sat", "min") are left out on purpose.
PUNKT_ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof sr jr st mt ft gen col lt sgt capt cmdr adm gov sen rep rev hon pres supt
    e.g i.e etc vs cf al approx ca viz
    inc corp ltd llc bros dept univ assn
    jan feb apr jun jul aug sep sept oct nov dec mon tue thu fri
    vol vols pp ch fig figs
    u.s u.k u.n e.u u.s.a u.s.s.r d.c n.y l.a a.m p.m b.c a.d
    ave blvd rd hwy km kg lb lbs hr hrs sq
""".split()
)
# Words that start a sentence when they follow an abbreviation that ends one ("... in the U.S. It grew."):
# Punkt's sentence-starter heuristic, which its English model learns from text; a short list of pronouns,
# determiners and connectives that do not follow an abbreviation inside a sentence.
PUNKT_SENTENCE_STARTERS = frozenset(
    """
    the it its he she they we i this these those there that his her their our however but and also
    in on at after before then thus so yet although while when if as today
""".split()
)


@cache
def _sentence_splitter():
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(PUNKT_ABBREVIATIONS)
    params.sent_starters = set(PUNKT_SENTENCE_STARTERS)
    return PunktSentenceTokenizer(params)


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences by NLTK's Punkt (ALCE's ``sent_tokenize``), with mtrbench's built-in
    English parameters (:data:`PUNKT_ABBREVIATIONS`): "Dr. Smith", "U.S.", "approx. 3.5", "e.g." and
    initials stay inside one sentence."""
    return [s.strip() for s in _sentence_splitter().tokenize(text.strip()) if s.strip()]


def statements(answer: str) -> list[str]:
    """The answer cut into sentences (ALCE's statements, :func:`sentences`); citation marks written after a
    sentence's final punctuation ("... end. [2] Next ...") belong to that sentence."""
    out: list[str] = []
    for part in sentences(answer):
        lead = _LEADING_MARKS.match(part)
        if lead and out:
            out[-1] = f"{out[-1]} {lead.group(0).strip()}"
            part = part[lead.end() :]
        if part.strip():
            out.append(part.strip())
    return out


# How far outside [0, 1] a value may fall by floating-point rounding alone (a few ulps at 1.0).
_OVERSHOOT = 1e-9


def unit_interval(value: float, where: str) -> float:
    """``value`` clipped to [0, 1] when it is outside by rounding only; further out is a bug, not a score."""
    value = float(value)
    if -_OVERSHOOT <= value <= 1.0 + _OVERSHOOT:
        return min(1.0, max(0.0, value))
    raise AssertionError(f"{where}: value {value!r} outside [0, 1] (a bug in the measure, not a score)")


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
        return re.compile(rf"{re.escape(self.key_stem)}(?:_rel(?P<rel>[0-9]+))?")

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
            values = {}
            for qid in inputs.qrels:
                gold = {d for d, g in inputs.qrels[qid].items() if g >= level}
                values[qid] = unit_interval(self.turn_value(turns[qid], gold), f"{self.label} {qid}")
            out.per_query[m] = values
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
            raise MtrbenchError(
                f"{family.label}: {len(unreferenced)} evaluated queries have no reference answer, "
                f"e.g. {unreferenced[0]}"
            )
    return {
        q: TurnText(
            answer=generations[q].answer,
            references=tuple(references.get(q, ())),
            passages=tuple(generations[q].passages),
        )
        for q in inputs.qrels
    }


def cited_documents(statement: str, passages: Sequence[str]) -> list[str | None]:
    """The documents a statement cites, one per distinct label in order; None for a label that names no
    passage shown (0, or beyond the list)."""
    labels = list(dict.fromkeys(citation_labels(statement)))
    return [passages[n - 1] if 1 <= n <= len(passages) else None for n in labels]
