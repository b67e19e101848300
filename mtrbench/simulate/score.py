"""``mtrbench simulate score``: session measures of a folder of transcripts, with no new qrels.

Each turn's top-k passages that the need's judgments do not grade are labelled by the UMBRELA assessor (the
existing stage: ``umbrela.jsonl`` in the folder, resumed, costed, failures counted); a pair whose label failed
counts as unjudged (grade 0) and is counted. Passages the corpus does not hold cannot be shown to the judge and
are counted apart. The measures (mtrbench.simulate.measures) go to ``score.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from mtrbench.analyses.ppi import LabelScale, PPIEstimate, ppi_mean, read_human_labels
from mtrbench.assess.pooling import PoolPair
from mtrbench.assess.umbrela import pair_key, umbrela_stage
from mtrbench.data import card_for_folder, load_task
from mtrbench.data.model import Corpus, TaskData
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import UserInputError
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.failure_rate import JudgeFailures
from mtrbench.llm.stage import StageLog, StageOptions, run_stage
from mtrbench.llm.types import ChatRunner
from mtrbench.simulate.measures import DEFAULT_BASE, DEFAULT_K, SessionScore, Summary, ndcg, session_gain, summarize
from mtrbench.simulate.transcripts import ANSWERS, Transcripts, read_transcripts

SCORE_NAME = "score.json"
LABEL_LOG = "umbrela.jsonl"


@dataclass(frozen=True)
class ScoreOptions:
    folder: Path
    k: int = DEFAULT_K
    base: float = DEFAULT_BASE
    cache: ResponseCache | None = None
    yes: bool = False
    show_progress: bool = True
    nuggets: bool = False  # also nugget scores of the answers, by the judge (judge nuggets' steps)
    nuggets_from: str = "passages"  # the source the nuggets are created from: "passages" or "responses"
    human_labels: Path | None = None  # people's 0-3 grades of labelled pairs ("<qid> | <doc id>"): a PPI interval


@dataclass
class ScoreResult:
    scores: list[SessionScore]
    summary: Summary
    labels: dict[tuple[str, str], int]  # (qid, doc id) -> UMBRELA grade
    label_failures: JudgeFailures | None
    outside_corpus: int  # passages no judge could be shown
    nugget_scores: dict[str, float] | None = None  # mean strict_vital, vital, strict_all, all over answered turns
    nugget_failures: list[JudgeFailures] = field(default_factory=list)
    ppi: PPIEstimate | None = None  # the mean UMBRELA grade of the labelled passages, corrected by people's labels


def turn_qid(session_id: str, turn: int) -> str:
    return f"{session_id}_{turn}"


def unjudged_pairs(transcripts: Transcripts, task: TaskData, k: int) -> tuple[list[PoolPair], int]:
    """(qid, doc) pairs of the top-k passages the need does not judge, each once; and how many are not in the
    corpus."""
    pairs, outside, seen = [], 0, set()
    for record in transcripts.records:
        for turn in record["turns"]:
            if not turn.get("ok"):
                continue
            qid = turn_qid(record["session_id"], turn["turn"])
            for rank, passage in enumerate(turn["passages"][:k], 1):
                doc = passage["id"]
                if doc in record["qrels"] or (qid, doc) in seen:
                    continue
                if doc not in task.corpus:
                    outside += 1
                    continue
                seen.add((qid, doc))
                pairs.append(PoolPair(qid, doc, rank, ("simulated",)))
    return pairs, outside


def session_score(
    record: Mapping[str, Any], labels: Mapping[tuple[str, str], int], k: int, base: float
) -> SessionScore:
    gains = []
    for turn in record["turns"]:
        qid = turn_qid(record["session_id"], turn["turn"])
        ranked = [p["id"] for p in turn["passages"]] if turn.get("ok") else []
        grades = dict(record["qrels"]) | {d: g for (q, d), g in labels.items() if q == qid}
        gains.append(ndcg(ranked, grades, k) if turn.get("ok") else 0.0)
    failed = sum(1 for t in record["turns"] if not t.get("ok"))
    return SessionScore(
        record["session_id"], record["status"], len(gains), failed, tuple(gains), session_gain(gains, base)
    )


def run_score(options: ScoreOptions, judge: JudgeConfig | None, client: ChatRunner | None = None) -> ScoreResult:
    """Label the unjudged passages (unless ``judge`` is None: they count as grade 0), then measure the sessions."""
    transcripts = read_transcripts(options.folder)
    task = load_task(card_for_folder(options.folder), split=transcripts.summary.get("split"))
    pairs, outside = unjudged_pairs(transcripts, task, options.k)
    labels: dict[tuple[str, str], int] = {}
    failures = None
    if judge is not None and pairs:
        stage = umbrela_stage(task, pairs, judge, "conversation")
        outcome, _ = run_stage(
            stage,
            StageLog(options.folder / LABEL_LOG, purpose="UMBRELA log"),
            StageOptions(options.cache, yes=options.yes, show_progress=options.show_progress),
            client=client,
        )
        for pair in pairs:
            record = outcome.records.get(pair_key(pair.qid, pair.doc_id))
            if record is not None and record.ok and isinstance(record.value, int):
                labels[(pair.qid, pair.doc_id)] = record.value
        failures = outcome.failures()
    scores = [session_score(r, labels, options.k, options.base) for r in transcripts.records]
    result = ScoreResult(scores, summarize(scores), labels, failures, outside)
    if options.human_labels is not None:
        result.ppi = labels_ppi(options.human_labels, labels)
    if judge is not None and options.nuggets:
        _nuggets(options, task, judge, result)
    write_score(options, result, judge, len(pairs))
    return result


def labels_ppi(path: Path, labels: Mapping[tuple[str, str], int]) -> PPIEstimate:
    """PPI (analyses.ppi) of the mean grade the judge gave the unjudged passages, from people's grades of some."""
    llm = {pair_key(qid, doc): float(grade) for (qid, doc), grade in labels.items()}
    if not llm:
        raise UserInputError("--human-labels: no passage was labelled by the judge (give --judge-model)")
    human = read_human_labels(path, LabelScale.integers(0, 3, "grade 0-3"), known_ids=llm)
    return ppi_mean(llm, human)


def responses_task(task: TaskData, records: Sequence[Mapping[str, Any]]) -> TaskData:
    """The transcripts' task whose turns each have their need's gold responses as their only relevant "passages"
    (added to the corpus in memory): the source ``judge nuggets`` creates the nuggets from."""
    ids, titles, texts = list(task.corpus.ids), list(task.corpus.titles), list(task.corpus.texts)
    sources: dict[str, dict[str, int]] = {}
    for record in records:
        if not record["gold_responses"]:
            raise UserInputError(f"--nuggets-from responses: need {record['need_id']} has no gold responses")
        sources[record["session_id"]] = {}
        for n, text in enumerate(record["gold_responses"], 1):
            doc = f"gold-response-{record['session_id']}-{n}"
            ids.append(doc)
            titles.append("")
            texts.append(text)
            sources[record["session_id"]][doc] = 1
    queries = [replace(q, qrels=dict(sources.get(q.conversation_id, {}))) for q in task.queries]
    return replace(task, corpus=Corpus(ids, titles, texts), queries=queries)


def _nuggets(options: ScoreOptions, task: TaskData, judge: JudgeConfig, result: ScoreResult) -> None:
    """Nuggets created from each turn's relevant passages (the need's judgments) or its need's gold responses, each
    answer assigned, as ``judge nuggets`` does (its log and files under ``nuggets-<source>/``)."""
    from mtrbench.judge.nuggets.run import NuggetJudgeOptions, judge_nuggets  # deferred: only with --nuggets

    answers = options.folder / ANSWERS
    if not answers.is_file() or not answers.read_text(encoding="utf-8").strip():
        result.nugget_scores = {"n": 0}
        return
    if options.nuggets_from == "responses":
        task = responses_task(task, read_transcripts(options.folder).records)
    folder = options.folder / f"nuggets-{options.nuggets_from}"
    nugget_options = NuggetJudgeOptions(folder, yes=options.yes, show_progress=options.show_progress)
    judged = judge_nuggets([answers], task, judge, nugget_options, cache=options.cache)
    if judged is not None:
        result.nugget_scores = dict(judged.scores[0].scores)
        result.nugget_failures = judged.failures


def write_score(options: ScoreOptions, result: ScoreResult, judge: JudgeConfig | None, unjudged: int) -> None:
    body = {
        "k": options.k,
        "discount_base": options.base,
        "summary": asdict(result.summary),
        "labels": {
            "judge": judge.model if judge is not None else None,
            "unjudged_pairs": unjudged,
            "labelled": len(result.labels),
            "failed": result.label_failures.failed if result.label_failures else 0,
            "outside_corpus": result.outside_corpus,
        },
        "nuggets": result.nugget_scores,
        "ppi_mean_label": result.ppi.as_dict() if result.ppi is not None else None,
        "sessions": [asdict(s) for s in result.scores],
    }
    atomic_write_text(options.folder / SCORE_NAME, json.dumps(body, indent=2, ensure_ascii=False) + "\n")
