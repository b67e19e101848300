"""Reference measures of a generations file against a task: which turns are scored, and their values."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mtrbench.data.model import TaskData
from mtrbench.formats.generations import Generation
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.judge.defaults import DEFAULT_MEASURES
from mtrbench.measures import Evaluation, Measure, evaluate, parse_measures
from mtrbench.measures.generation import GenerationFamily


@dataclass
class GenerationScores:
    evaluation: Evaluation  # per turn (qid) and mean of each measure, keyed as results are (bleu_1, ...)
    scored: list[str]  # qids scored, in generations-file order
    notes: Counter = field(default_factory=Counter)  # turns left out, and why

    def means(self) -> dict[str, float]:
        return self.evaluation.scores()


def task_references(task: TaskData) -> dict[str, tuple[str, ...]]:
    """qid -> the task's reference answers (CORAL responses, MTRAG agent turns, sample answers)."""
    return {q.qid: tuple(a for a in q.answers if a.strip()) for q in task.queries}


def generation_measures(texts: Sequence[str]) -> list[Measure]:
    measures = parse_measures(texts, [10])
    wrong = [str(m) for m in measures if not isinstance(m.spec, GenerationFamily)]
    if wrong:
        raise UserInputError(f"{', '.join(wrong)}: not a generation measure; judge takes {', '.join(DEFAULT_MEASURES)}")
    return measures


def score_generations(
    generations: Mapping[str, Generation], task: TaskData, measures: Sequence[Measure], relevance_level: int = 1
) -> GenerationScores:
    """Score every generated turn the task can score: a known qid with a gold passage (grade >= 1), and a
    reference answer when a reference measure is asked. Turns left out are counted in ``notes``."""
    if not measures:
        raise UserInputError("no measure asked for")
    by_qid = {q.qid: q for q in task.queries}
    references = task_references(task)
    need_reference = any(getattr(m.spec, "needs_references", False) for m in measures)
    notes: Counter = Counter()
    scored: list[str] = []
    for qid in generations:
        query = by_qid.get(qid)
        if query is None:
            notes[f"generations for queries not in {task.name} ({task.split}) (left out)"] += 1
        elif not query.has_positive:
            notes["turns without a gold passage (left out, as in retrieval scoring)"] += 1
        elif need_reference and not references.get(qid):
            notes["turns without a reference answer (left out)"] += 1
        else:
            scored.append(qid)
    if not scored:
        raise DataError(
            f"no generation can be scored against {task.name} ({task.split}): "
            + ("; ".join(f"{n} {what}" for what, n in notes.items()) or "no generations")
        )
    missing = sum(1 for q in task.queries if q.has_positive and q.qid not in generations)
    if missing:
        notes["task turns with a gold passage but no generation (not scored)"] += missing
    qrels = {qid: dict(by_qid[qid].qrels) for qid in scored}
    evaluation = evaluate(qrels, {}, measures, relevance_level, generations=generations, references=references)
    return GenerationScores(evaluation=evaluation, scored=scored, notes=notes)
