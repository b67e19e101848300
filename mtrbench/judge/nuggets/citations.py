"""Citation support, as TREC RAG 2024's support evaluation judges it: every (answer sentence, cited passage) pair is
labelled full_support, partial_support or no_support by the LLM, weighted 1, 0.5 and 0.

Per answer: support precision = the mean weight over its (sentence, citation) pairs (None without a citation);
support recall = the mean over its sentences of the best weight among the sentence's citations (0 for a sentence
citing nothing). A citation label that names no shown passage is no_support without asking. An answer with a pair
the judge failed on is left out of the run's means (counted as ``incomplete``); a rerun asks only the failed pairs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mtrbench.data.model import TaskData
from mtrbench.formats.generations import Generation
from mtrbench.judge.nuggets.assign import without_citations
from mtrbench.judge.nuggets.labels import CITATION_WEIGHT, NO
from mtrbench.judge.nuggets.prompts import SUPPORT_FORMAT, parse_support, support_messages
from mtrbench.judge.nuggets.steps import StepAsker, step_item, step_stage, value_of
from mtrbench.judge.nuggets.turns import passage_text
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.stage import JSONValue, Stage, StageItem
from mtrbench.measures.generation import citation_labels, statements

SUPPORT = "support"
UNIT = "citations"


@dataclass(frozen=True)
class Citation:
    run_id: str
    qid: str
    sentence: int  # index of the sentence in the answer
    label: int  # the [n] cited
    doc_id: str | None  # passages[n-1], None when there is no such passage

    @property
    def key(self) -> str:
        return f"{SUPPORT}|{self.run_id}|{self.qid}|{self.sentence}|{self.label}"


@dataclass(frozen=True)
class AnswerSupport:
    sentences: int
    pairs: int
    precision: float | None
    recall: float
    labels: tuple[tuple[int, int, str], ...]  # (sentence, label, support)


def answer_citations(run_id: str, generation: Generation) -> tuple[list[str], list[Citation]]:
    """The answer's sentences and each distinct label each one cites."""
    parts = statements(generation.answer)
    cited = []
    for s, sentence in enumerate(parts):
        for label in dict.fromkeys(citation_labels(sentence)):
            doc = generation.passages[label - 1] if 1 <= label <= len(generation.passages) else None
            cited.append(Citation(run_id, generation.qid, s, label, doc))
    return parts, cited


def support_item(citation: Citation, sentence: str, passage: str) -> StageItem:
    fields: dict[str, JSONValue] = {
        "run": citation.run_id,
        "qid": citation.qid,
        "sentence": citation.sentence,
        "doc_id": citation.doc_id,
    }
    return step_item(
        citation.key, support_messages(without_citations(sentence), passage), parse_support, SUPPORT_FORMAT, fields
    )


def support_stage(
    runs: Mapping[str, Mapping[str, Generation]], task: TaskData, judge: JudgeConfig, max_chars: int | None
) -> Stage:
    items = []
    for run_id, generations in runs.items():
        for generation in generations.values():
            parts, cited = answer_citations(run_id, generation)
            for citation in cited:
                text = passage_text(task, citation.doc_id, max_chars) if citation.doc_id is not None else None
                if text is not None:
                    items.append(support_item(citation, parts[citation.sentence], text))
    return step_stage(SUPPORT, judge, items, UNIT)


def answer_support(parts: Sequence[str], cited: Sequence[Citation], labels: Mapping[str, str]) -> AnswerSupport:
    """``labels``: citation key -> support for every pair that has a passage (the others are no_support)."""
    got = [(c.sentence, c.label, labels.get(c.key, NO) if c.doc_id is not None else NO) for c in cited]
    weights = [CITATION_WEIGHT[support] for _, _, support in got]
    best = [max((CITATION_WEIGHT[s] for i, _, s in got if i == n), default=0.0) for n in range(len(parts))]
    return AnswerSupport(
        sentences=len(parts),
        pairs=len(got),
        precision=sum(weights) / len(weights) if weights else None,
        recall=sum(best) / len(best) if best else 0.0,
        labels=tuple(got),
    )


def judge_citations(
    runs: Mapping[str, Mapping[str, Generation]],
    task: TaskData,
    judge: JudgeConfig,
    max_chars: int | None,
    asker: StepAsker,
) -> dict[str, dict[str, AnswerSupport | None]] | None:
    """run id -> qid -> its support (None: a pair failed); None after a dry run."""
    stage = support_stage(runs, task, judge, max_chars)
    outcome = asker.ask(stage, UNIT)
    if outcome is None:
        return None
    asked = {item.key for item in stage.items}
    out: dict[str, dict[str, AnswerSupport | None]] = {}
    for run_id, generations in runs.items():
        out[run_id] = {}
        for qid, generation in generations.items():
            parts, cited = answer_citations(run_id, generation)
            values = {c.key: value_of(outcome, c.key) for c in cited if c.key in asked}
            complete = all(isinstance(v, str) for v in values.values())
            labels = {k: str(v) for k, v in values.items()}
            out[run_id][qid] = answer_support(parts, cited, labels) if complete else None
    return out


def run_support(per_answer: Mapping[str, AnswerSupport | None]) -> dict[str, float | int | None]:
    """A run's means over its complete answers: precision over answers with a citation, recall over all."""
    done = [s for s in per_answer.values() if s is not None]
    cited = [s.precision for s in done if s.precision is not None]
    return {
        "answers": len(done),
        "incomplete": len(per_answer) - len(done),
        "precision": sum(cited) / len(cited) if cited else None,
        "precision_answers": len(cited),
        "recall": sum(s.recall for s in done) / len(done) if done else None,
        "pairs": sum(s.pairs for s in done),
    }
