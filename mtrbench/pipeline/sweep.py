"""Grid sweeps over hybrid pipeline settings (H-RAG §4.2, Table 2): one ordinary result per cell.

The legs are loaded once (the builder's ``load_legs``) and each cell is assembled around them by the same
builder as any other retriever; every cell indexes once (the dense leg from the embedding cache).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import product

from mtrbench.infra.errors import UserInputError
from mtrbench.pipeline.evaluate import EvalConfig, run_eval
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
    results: list[Result]  # one per history strategy


def run_sweep(model: str, task_name: str, config: EvalConfig, grid: SweepGrid,
              retriever_options: RetrieverOptions | None = None,
              progress: Callable[[str], None] | None = None) -> list[SweepCell]:
    say = progress or (lambda message: None)
    options = retriever_options or RetrieverOptions()
    resolved = resolve(model)
    if resolved.spec is None or resolved.spec.kind != "hybrid":
        raise UserInputError(f"a sweep over --alpha/--candidate-k needs a hybrid model (hybrid:DENSE+bm25), not "
                             f"'{resolved.requested}'")
    config = replace(config, overwrite="always")  # the table compares every cell: none is skipped as finished
    legs = load_legs(resolved, options)
    cells = []
    for alpha, candidate_k in grid.cells:
        say(f"Sweep cell alpha={alpha} candidate_k={candidate_k}")
        cell_options = options.with_values(alpha=alpha, candidate_k=candidate_k)
        retriever = assemble(resolved, cell_options, legs)
        cells.append(SweepCell(alpha, candidate_k, run_eval(resolved, task_name, config, cell_options, progress=say,
                                                            retriever=retriever)))
    return cells


def best_cell(cells: list[SweepCell], history_index: int = 0) -> int:
    """Index of the cell with the highest main score (the first one on a tie)."""
    scores = [c.results[history_index].main_score for c in cells]
    return max(range(len(cells)), key=lambda i: (scores[i], -i))
