"""The candidate pool: the top-k of several runs of one task, minus what the task already judges."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from mtrbench.analyses.pool import pooled
from mtrbench.data.model import TaskData
from mtrbench.formats.run import Run, ranked, read_run
from mtrbench.infra.errors import DataError, UserInputError


@dataclass(frozen=True)
class PoolPair:
    qid: str
    doc_id: str
    best_rank: int  # best (smallest) rank over the runs that pooled it
    runs: tuple[str, ...]  # names of the runs whose top-k holds it


@dataclass
class Pool:
    runs: list[str]
    depth: int
    pooled_pairs: int  # distinct (query, document) pairs in the union of the runs' top-k
    already_judged: int  # of those, pairs the task's qrels already judge (any grade): never re-assessed
    pairs: list[PoolPair]  # the rest, to assess, in task query order then best rank
    warnings: Counter = field(default_factory=Counter)

    def summary(self) -> dict:
        return {
            "runs": self.runs,
            "depth": self.depth,
            "pooled_pairs": self.pooled_pairs,
            "already_judged": self.already_judged,
            "to_assess": len(self.pairs),
            "warnings": dict(self.warnings),
        }


def read_runs(paths: list[str]) -> dict[str, Run]:
    names = [Path(p).name for p in paths]
    if len(set(names)) != len(names):
        names = [str(p) for p in paths]
    if len(set(names)) != len(names):
        raise UserInputError("the same run file is given twice in --runs")
    return {name: read_run(path) for name, path in zip(names, paths)}


def build_pool(task: TaskData, runs: dict[str, Run], depth: int) -> Pool:
    if depth < 1:
        raise UserInputError("--depth must be at least 1")
    order = {q.qid: n for n, q in enumerate(task.queries)}
    judged = task.qrels()
    warnings: Counter = Counter()
    for name, run in runs.items():
        unknown = [q for q in run if q not in order]
        if unknown and len(unknown) == len(run):
            raise DataError(
                f"run {name}: none of its query ids is a query of task {task.name} ({task.split}); e.g. '{unknown[0]}'"
            )
        warnings["run query ids not in the task (skipped)"] += len(unknown)

    candidates = pooled(runs.values(), depth)
    best: dict[tuple[str, str], int] = {}
    sources: dict[tuple[str, str], list[str]] = {}
    for name, run in runs.items():
        for qid, docs in run.items():
            for rank, (doc_id, _) in enumerate(ranked(docs)[:depth], 1):
                key = (qid, doc_id)
                best[key] = min(rank, best.get(key, rank))
                sources.setdefault(key, []).append(name)

    pairs = []
    n_judged = 0
    for qid, doc_id in candidates:
        if qid not in order:
            continue
        if doc_id not in task.corpus:
            warnings["pooled documents not in the corpus (skipped)"] += 1
            continue
        if doc_id in judged.get(qid, {}):
            n_judged += 1
            continue
        pairs.append(PoolPair(qid, doc_id, best[(qid, doc_id)], tuple(sources[(qid, doc_id)])))
    pairs.sort(key=lambda p: (order[p.qid], p.best_rank, p.doc_id))
    in_task = sum(1 for q, d in candidates if q in order and d in task.corpus)
    return Pool(
        runs=list(runs), depth=depth, pooled_pairs=in_task, already_judged=n_judged, pairs=pairs, warnings=+warnings
    )
