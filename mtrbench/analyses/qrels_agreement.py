"""How far two sets of relevance labels agree (LLM against human, one assessor against another), as TREC RAG
reports UMBRELA's labels: Cohen's kappa on the pairs both judge, and whether the systems rank alike under each.

* Only (query, document) pairs judged in both files count for kappa and the confusion matrices; how many pairs each
  file judges, how many they share and how many only one judges are reported.
* Cohen's kappa = (p_o - p_e) / (1 - p_e), p_o the share of shared pairs given the same label, p_e the share
  expected by chance from each file's label distribution (the definition of scikit-learn's
  ``cohen_kappa_score``, unweighted). "binary": relevant = grade >= threshold; "graded": the grades themselves.
  Undefined (None) when p_e = 1 (both files give every shared pair one and the same label).
* Given runs, each run is scored against each whole file (not only the shared pairs, as a track scores runs
  against its qrels) and the two rankings are compared by ``meta stability``'s ``rank_agreement``
  (Kendall tau-b, tau_AP, swapped pairs).
* A pair one file judges twice with different grades keeps the later grade, with a warning counting such pairs per
  file; a threshold above every grade of both files (no pair relevant) is refused.
* With the second file taken as human labels of a subset of the first (an LLM's), PPI (``analyses.ppi``) gives the
  share of relevant pairs and the mean grade over the first file's pairs, corrected by the shared ones.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from mtrbench.analyses.meta.inputs import InputSpec, file_label, runs_matrices
from mtrbench.analyses.meta.stability import RankAgreement, rank_agreement
from mtrbench.analyses.ppi import PPIEstimate, ppi_mean
from mtrbench.formats.qrels import Qrels, RepeatedJudgment, read_qrels
from mtrbench.infra.errors import DataError, UserInputError

log = logging.getLogger(__name__)

Pair = tuple[str, str]  # (query id, document id)


@dataclass(frozen=True)
class LabelAgreement:
    """Agreement of two labellings of the same pairs on one set of labels."""

    labels: list[int]  # the rows' and columns' labels, ascending
    confusion: list[list[int]]  # confusion[i][j]: pairs labelled labels[i] by A and labels[j] by B
    observed: float  # p_o: share of pairs with the same label
    expected: float  # p_e: share expected by chance
    kappa: float | None  # None when p_e = 1


@dataclass(frozen=True)
class QrelsAgreement:
    first: str  # file A
    second: str  # file B
    threshold: int
    pairs_first: int  # pairs A judges
    pairs_second: int
    shared: int  # pairs both judge: the only ones kappa counts
    only_first: int
    only_second: int
    binary: LabelAgreement  # labels 0 (grade < threshold) and 1
    graded: LabelAgreement
    ranking: RankAgreement | None = None
    ranking_measure: str | None = None
    ppi: dict[str, PPIEstimate] = field(default_factory=dict)  # "relevant share", "mean grade" (B as human)
    regraded: dict[str, int] = field(default_factory=dict)  # file -> pairs it judges again with another grade

    def as_dict(self) -> dict:
        document = asdict(self)
        if not self.regraded:
            document.pop("regraded")
        if self.ranking is None:
            document.pop("ranking")
            document.pop("ranking_measure")
        if not self.ppi:
            document.pop("ppi")
        return document


def _pairs(qrels: Qrels) -> dict[Pair, int]:
    return {(qid, doc): grade for qid, docs in qrels.items() for doc, grade in docs.items()}


def cohen_kappa(first: Sequence[int], second: Sequence[int]) -> LabelAgreement:
    """Cohen's (unweighted) kappa of two labellings of the same items, with their confusion matrix."""
    if len(first) != len(second) or not first:
        raise DataError("kappa needs two labellings of the same, non-empty list of items")
    labels = sorted(set(first) | set(second))
    index = {label: i for i, label in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels)), dtype=np.int64)
    np.add.at(matrix, ([index[v] for v in first], [index[v] for v in second]), 1)
    total = matrix.sum()
    observed = float(np.trace(matrix) / total)
    expected = float((matrix.sum(axis=1) * matrix.sum(axis=0)).sum() / total**2)
    kappa = None if np.isclose(expected, 1.0) else (observed - expected) / (1.0 - expected)
    return LabelAgreement(labels, matrix.tolist(), observed, expected, kappa)


@dataclass(frozen=True)
class AgreeOptions:
    first: str
    second: str
    threshold: int = 2
    runs: tuple[str, ...] = ()
    measure: str = "nDCG@10"
    relevance_level: int | None = None  # of the runs' measures; None: the threshold
    second_is_human: bool = False  # report PPI with B as human labels of a subset of A's pairs
    alpha: float = 0.05


def agree(options: AgreeOptions) -> QrelsAgreement:
    """The agreement of two qrels files (TREC, whitespace-split as trec_eval does; or BEIR's layout)."""
    if options.threshold < 1:
        raise UserInputError(f"--threshold must be at least 1, got {options.threshold}")
    (first, regraded_first), (second, regraded_second) = _read(options.first), _read(options.second)
    regraded = {path: n for path, n in ((options.first, regraded_first), (options.second, regraded_second)) if n}
    a, b = _pairs(first), _pairs(second)
    shared = [pair for pair in a if pair in b]
    if not shared:
        raise DataError(f"{options.first} and {options.second} judge no (query, document) pair in common")
    _check_threshold(options, first, second)
    grades_a, grades_b = [a[p] for p in shared], [b[p] for p in shared]
    binary = cohen_kappa(
        [int(g >= options.threshold) for g in grades_a], [int(g >= options.threshold) for g in grades_b]
    )
    ranking, measure = _ranking(options) if options.runs else (None, None)
    return QrelsAgreement(
        first=options.first,
        second=options.second,
        threshold=options.threshold,
        pairs_first=len(a),
        pairs_second=len(b),
        shared=len(shared),
        only_first=len(a) - len(shared),
        only_second=len(b) - len(shared),
        binary=binary,
        graded=cohen_kappa(grades_a, grades_b),
        ranking=ranking,
        ranking_measure=measure,
        ppi=_ppi(a, b, shared, options) if options.second_is_human else {},
        regraded=regraded,
    )


def _read(path: str) -> tuple[Qrels, int]:
    """The file's judgments and how many pairs it judges again with another grade (the later kept), with a warning:
    which grade is the file's label is a guess. A line repeating a pair's grade changes nothing and is not counted."""
    regraded: dict[Pair, RepeatedJudgment] = {}

    def heard(repeat: RepeatedJudgment) -> None:
        if repeat.earlier != repeat.later:
            regraded.setdefault((repeat.qid, repeat.doc_id), repeat)

    qrels = read_qrels(path, on_repeat=heard)
    if regraded:
        first = next(iter(regraded.values()))
        log.warning(
            f"warning: {path}: {len(regraded)} (query, document) pair(s) judged again with another grade, the later "
            f"kept (first: {first.where}, {first.qid} {first.doc_id}: {first.earlier} then {first.later})"
        )
    return qrels, len(regraded)


def _check_threshold(options: AgreeOptions, first: Qrels, second: Qrels) -> None:
    """A threshold above every grade of both files makes every pair non-relevant: binary kappa says nothing."""
    files = ((options.first, first), (options.second, second))
    top, path = max((max(g for docs in qrels.values() for g in docs.values()), path) for path, qrels in files)
    if options.threshold > top:
        raise UserInputError(
            f"--threshold {options.threshold} is above every grade: the largest is {top} (in {path}), so no pair "
            "would be relevant"
        )


def _ranking(options: AgreeOptions) -> tuple[RankAgreement, str]:
    level = options.threshold if options.relevance_level is None else options.relevance_level
    if len(options.runs) < 3:
        raise UserInputError(f"ranking agreement needs at least three --runs, got {len(options.runs)}")
    matrices = []
    for qrels in (options.first, options.second):
        spec = InputSpec(runs=tuple(options.runs), qrels=qrels, relevance_level=level)
        matrices.append(runs_matrices(spec, [options.measure])[0])
    labels = [file_label(options.first), file_label(options.second)]
    if labels[0] == labels[1]:
        labels = [str(Path(options.first)), str(Path(options.second))]
    return rank_agreement(matrices[0], matrices[1], labels[0], labels[1]), matrices[0].measure


def _ppi(a: dict[Pair, int], b: dict[Pair, int], shared: list[Pair], options: AgreeOptions) -> dict[str, PPIEstimate]:
    """B's labels correct A's over every pair A judges: the relevant share and the mean grade."""
    keys = {pair: f"{pair[0]}\t{pair[1]}" for pair in a}
    relevant = {keys[p]: float(g >= options.threshold) for p, g in a.items()}
    human_relevant = {keys[p]: float(b[p] >= options.threshold) for p in shared}
    grades = {keys[p]: float(g) for p, g in a.items()}
    human_grades = {keys[p]: float(b[p]) for p in shared}
    return {
        "relevant share": ppi_mean(relevant, human_relevant, options.alpha),
        "mean grade": ppi_mean(grades, human_grades, options.alpha),
    }
