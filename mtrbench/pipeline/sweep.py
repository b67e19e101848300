"""Grid sweeps over hybrid pipeline settings (H-RAG §4.2, Table 2): one ordinary result per cell.

The legs are loaded once (the builder's ``load_legs``) and each cell is assembled around them by the same
builder as any other retriever; every cell indexes once (the dense leg from the embedding cache). A cell whose
result is finished under the overwrite strategy is read back instead of evaluated again, so a re-run of a finished
sweep evaluates nothing and still has every cell's scores for its table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import product

from mtrbench.infra.errors import UserInputError
from mtrbench.pipeline.evaluate import EvalConfig, SkippedResult, run_eval
from mtrbench.pipeline.histories import HistoryChoice
from mtrbench.results.result import Result
from mtrbench.retrieve.builder import assemble, load_legs, resolve
from mtrbench.retrieve.options import RetrieverOptions


@dataclass(frozen=True)
class SweepGrid:
    alphas: tuple[float | None, ...] = (None,)  # None: the retriever's default
    candidate_ks: tuple[int | None, ...] = (None,)

    @property
    def cells(self) -> list[tuple[float | None, int | None]]:
        return list(product(self.alphas, self.candidate_ks))


@dataclass
class SweepCell:
    alpha: float | None
    candidate_k: int | None
    results: list[Result]  # one per history strategy, in the order of the config's histories
    reused: int = 0  # of them, finished results read back instead of evaluated


def run_sweep(
    model: str,
    task_name: str,
    config: EvalConfig,
    grid: SweepGrid,
    retriever_options: RetrieverOptions | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[SweepCell]:
    say = progress or (lambda message: None)
    options = retriever_options or RetrieverOptions()
    resolved = resolve(model)
    if resolved.spec is None or resolved.spec.kind != "hybrid":
        raise UserInputError(
            f"a sweep over --alpha/--candidate-k needs a hybrid model (hybrid:DENSE+bm25), not '{resolved.requested}'"
        )
    legs = load_legs(resolved, options)
    cells = []
    for alpha, candidate_k in grid.cells:
        say(f"Sweep cell alpha={alpha} candidate_k={candidate_k}")
        cell_options = options.with_values(alpha=alpha, candidate_k=candidate_k)
        retriever = assemble(resolved, cell_options, legs)
        skipped: list[SkippedResult] = []
        evaluated = run_eval(
            resolved, task_name, config, cell_options, progress=say, retriever=retriever, on_skip=skipped.append
        )
        reused = [Result.load(s.path) for s in skipped]
        cells.append(
            SweepCell(alpha, candidate_k, in_history_order([*evaluated, *reused], config.histories), reused=len(reused))
        )
    return cells


def in_history_order(results: list[Result], histories: list[HistoryChoice]) -> list[Result]:
    """Results evaluated now and finished ones read back, in the order the histories were asked for."""
    rank = {name: i for i, name in enumerate(histories) if isinstance(name, str)}
    return sorted(results, key=lambda r: rank.get(r.history, len(rank)))


def best_cell(cells: list[SweepCell], history_index: int = 0) -> int:
    """Index of the cell with the highest main score (the first one on a tie)."""
    scores = [c.results[history_index].main_score for c in cells]
    return max(range(len(cells)), key=lambda i: (scores[i], -i))
