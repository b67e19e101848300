"""Systems x queries score matrices: what every meta-analysis reads.

Three sources give the same matrix: ``eval`` results (the result JSON or its ``<task>.per_query.jsonl``)
or a leaderboard JSON whose entries point at their result files, both read by ``mtrbench.results.systems``,
or TREC runs scored here against one qrels file with pytrec_eval. Systems that do not cover the same queries are put on the union of queries, and a query
a system lacks scores 0 (as ``trec_eval -c`` scores it); how many were filled is kept per system, so the
command can say so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mtrbench.formats.qrels import read_qrels
from mtrbench.formats.run import read_run
from mtrbench.infra.errors import DataError, MtrbenchError, UserInputError
from mtrbench.infra.numeric import finite_matrix

# CAsT, QReCC, TopiOCQA, MTRAG and the sample name a turn `<conversation>_<turn>` (CAsT 2019: `31_1`,
# some exports `31-1`); a run carries no conversation field, so this rule recovers it.
TURN_ID = re.compile(r"^(?P<conversation>.+)[_-](?P<turn>[0-9]+)$")


@dataclass(frozen=True)
class SystemScores:
    """One system's per-query values of one measure, with the conversation of each query when known."""

    name: str
    task: str
    values: dict[str, float]  # qid -> value
    conversations: dict[str, str] = field(default_factory=dict)  # qid -> conversation id
    scored_absent: int = 0  # queries in ``values`` the system did not answer, already scored 0


@dataclass(frozen=True)
class ScoreMatrix:
    """``scores[i, j]``: system ``systems[i]`` on query ``queries[j]`` under ``measure`` (a result key)."""

    task: str
    measure: str
    systems: tuple[str, ...]
    queries: tuple[str, ...]
    conversations: tuple[str, ...]  # the conversation of each query, in query order
    scores: np.ndarray
    filled: dict[str, int] = field(default_factory=dict)  # system -> queries it lacked, scored 0

    @property
    def means(self) -> np.ndarray:
        return self.scores.mean(axis=1)

    @property
    def filled_total(self) -> int:
        return sum(self.filled.values())

    def unit_groups(self, unit: str) -> np.ndarray:
        """The resampling unit of each query as an index from 0: each query its own (``query``), or its
        conversation (``conversation``)."""
        if unit == "query":
            return np.arange(len(self.queries))
        if unit != "conversation":
            raise UserInputError(f"--unit must be query or conversation, got '{unit}'")
        index: dict[str, int] = {}
        return np.array([index.setdefault(c, len(index)) for c in self.conversations])


def file_label(path: str | Path) -> str:
    """``runs/org_convdr.run.gz`` -> ``org_convdr``: what tables and JSON call a run or qrels file."""
    name = Path(path).name
    for suffix in (".gz", ".run", ".trec", ".txt", ".qrels", ".qrel", ".tsv"):
        name = name[: -len(suffix)] if name.endswith(suffix) and len(name) > len(suffix) else name
    return name


def conversation_of(qid: str) -> str | None:
    """``31_4`` -> ``31``; None for an id that does not end in a turn number."""
    match = TURN_ID.match(qid)
    return match.group("conversation") if match else None


def query_conversation(qid: str, recorded: object = None) -> str:
    """The conversation a query belongs to, the one rule of every analysis that groups turns (meta-analyses,
    the leaderboard's tie-aware ranks): the conversation id recorded with it (a result's per-query row), else
    the one its id names (``conversation_of``), else the query alone (a unit of its own)."""
    if recorded is not None and str(recorded) != "":
        return str(recorded)
    return conversation_of(qid) or qid


def build_matrix(systems: Sequence[SystemScores], measure: str) -> ScoreMatrix:
    """Put systems of one task on the union of their queries (missing ones score 0 and are counted)."""
    if len(systems) < 2:
        raise UserInputError(f"a meta-analysis compares systems: got {len(systems)}, give at least two")
    names = [s.name for s in systems]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UserInputError(f"systems named twice: {', '.join(repeated)} (give each input once)")
    tasks = sorted({s.task for s in systems})
    if len(tasks) > 1:
        raise UserInputError(
            f"systems of different tasks in one comparison: {', '.join(tasks)}; "
            f"give --tasks to compare tasks side by side"
        )
    queries = sorted(set().union(*(s.values for s in systems)))
    if len(queries) < 2:
        raise DataError(f"{measure}: {len(queries)} query scored; a meta-analysis needs at least two")
    known: dict[str, str] = {}
    for s in systems:
        known.update(s.conversations)
    conversations = tuple(query_conversation(q, known.get(q)) for q in queries)
    scores = np.array([[s.values.get(q, 0.0) for q in queries] for s in systems], dtype=float)
    finite_matrix(scores, f"{measure}: a per-query value is not a finite number")
    filled = {
        s.name: len(queries) - len(s.values) + s.scored_absent
        for s in systems
        if len(queries) - len(s.values) + s.scored_absent
    }
    return ScoreMatrix(
        task=tasks[0],
        measure=measure,
        systems=tuple(names),
        queries=tuple(queries),
        conversations=conversations,
        scores=scores,
        filled=filled,
    )


# -- eval results (read by mtrbench.results.systems) ---------------------------------------------------
def short_model(model: str) -> str:
    """``org/name`` (or a local path) -> ``name``."""
    return model.rstrip("/").rsplit("/", 1)[-1]


def system_labels(described: Sequence[tuple[str, str | None]]) -> list[str]:
    """``model (history)``, shortened to the history when every system is one model, and to the model when
    every system uses one history."""
    models = {model for model, _ in described}
    histories = {history for _, history in described}
    if len(models) == 1 and len(histories) == len(described) and None not in histories:
        return [str(history) for _, history in described]
    if len(histories) == 1:
        return [short_model(model) for model, _ in described]
    return [f"{short_model(model)} ({history})" for model, history in described]


# -- TREC runs ---------------------------------------------------------------------------------------
def score_runs(
    runs: dict[str, dict[str, dict[str, float]]],
    qrels: dict[str, dict[str, int]],
    measure: str,
    relevance_level: int,
    task: str,
) -> list[SystemScores]:
    from mtrbench.measures import evaluate, parse  # deferred: loads pytrec_eval

    parsed = parse(measure)
    key = parsed.key(relevance_level)
    systems = []
    for name, run in runs.items():
        if not set(run) & set(qrels):
            raise DataError(f"run {name} answers none of the judged queries of {task}: same task?")
        evaluation = evaluate(qrels, run, [parsed], relevance_level=relevance_level)
        if key not in evaluation.metric_keys:
            raise UserInputError(f"{measure} has no per-query value: meta needs a per-query measure")
        absent = len(set(evaluation.per_query) - {q for q, docs in run.items() if docs})
        systems.append(SystemScores(name, task, evaluation.values(key), scored_absent=absent))
    return systems


def measure_key(measure: str, relevance_level: int) -> str:
    """The result key a measure string is stored under (``nDCG@3`` -> ``ndcg_at_3``); a key passes through."""
    from mtrbench.measures import measure_for_key, parse  # deferred: loads pytrec_eval

    if measure_for_key(measure) is not None:
        return measure
    try:
        return parse(measure).key(relevance_level)
    except MtrbenchError as exc:
        raise UserInputError(str(exc)) from None


# -- one place that turns the command's inputs into matrices ---------------------------------------------
DEFAULT_RUN_MEASURE = "nDCG@10"


@dataclass(frozen=True)
class InputSpec:
    """Where the systems come from: eval results (or leaderboards), or TREC runs with their qrels."""

    results: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()
    qrels: str | None = None
    relevance_level: int = 1
    tasks: tuple[str, ...] = ()  # keep these tasks of the results, in this order; empty: every task

    def __post_init__(self) -> None:
        if bool(self.results) == bool(self.runs):
            raise UserInputError(
                "give the systems either as --results (eval results, per-query files, "
                "leaderboards) or as --runs with --qrels, not both nor neither"
            )
        if self.runs and not self.qrels:
            raise UserInputError("--runs needs --qrels")
        if self.qrels and not self.runs:
            raise UserInputError("--qrels goes with --runs (results carry their own per-query values)")
        if self.relevance_level < 1:
            raise UserInputError(f"--relevance-level must be a positive integer, got {self.relevance_level}")
        if self.tasks and self.runs:
            raise UserInputError("--tasks selects tasks among --results; runs with one qrels are one task")


def runs_matrices(spec: InputSpec, measures: Sequence[str]) -> list[ScoreMatrix]:
    """One matrix per measure of the runs in ``spec`` (nDCG@10 when none is asked)."""
    from mtrbench.measures import label  # deferred: loads pytrec_eval

    qrels = read_qrels(spec.qrels)
    runs = {file_label(p): read_run(p) for p in spec.runs}
    if len(runs) < len(spec.runs):
        raise UserInputError("two --runs share a file name; give each run once, under its own name")
    task = file_label(spec.qrels)
    matrices = []
    for measure in measures or [DEFAULT_RUN_MEASURE]:
        key = measure_key(measure, spec.relevance_level)
        matrices.append(build_matrix(score_runs(runs, qrels, label(key), spec.relevance_level, task), key))
    return matrices
