"""Grid sweeps over hybrid pipeline settings (H-RAG §4.2, Table 2): one ordinary result per cell.

The legs are loaded once and indexed once per cell (the dense leg from the embedding cache).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import product

from mtrbench.infra.errors import MtrbenchError
from mtrbench.pipeline.evaluate import EvalConfig, StrategyResult, run_eval
from mtrbench.retrieve import RetrieverOptions, build_retriever, resolve_model


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
    results: list[StrategyResult]  # one per history strategy


def run_sweep(model: str, task_name: str, config: EvalConfig, grid: SweepGrid,
              retriever_options: RetrieverOptions | None = None,
              progress: Callable[[str], None] | None = None) -> list[SweepCell]:
    say = progress or (lambda message: None)
    options = retriever_options or RetrieverOptions()
    spec = resolve_model(model)
    if spec.kind != "hybrid":
        raise MtrbenchError(f"a sweep over --alpha/--candidate-k needs a hybrid model (hybrid:DENSE+bm25), not '{model}'")
    from mtrbench.retrieve.hybrid import DEFAULT_ALPHA, HybridRetriever

    config = replace(config, overwrite="always")  # the table compares every cell: none is skipped as finished
    legs = replace(options, alpha=None, candidate_k=None, rerank=None)
    dense, sparse = build_retriever(spec.model_id, legs), build_retriever(spec.doc_model_id, legs)
    cells = []
    for alpha, candidate_k in grid.cells:
        say(f"Sweep cell alpha={alpha} candidate_k={candidate_k}")
        alpha = DEFAULT_ALPHA if alpha is None else alpha
        if options.chunking:  # candidate_k counts the children retrieved, as H-RAG's k does
            from mtrbench.retrieve.chunking import Chunking, ParentChildRetriever

            retriever = ParentChildRetriever(HybridRetriever(dense, sparse, alpha=alpha), Chunking.parse(options.chunking),
                                             candidate_k=candidate_k)
        else:
            retriever = HybridRetriever(dense, sparse, alpha=alpha, candidate_k=candidate_k)
        if options.rerank:
            from mtrbench.retrieve.rerank import CrossEncoderReranker

            retriever = CrossEncoderReranker(retriever, options.rerank, rerank_k=options.rerank_k,
                                             device=options.device, batch_size=options.rerank_batch_size,
                                             show_progress=options.show_progress)
        cells.append(SweepCell(alpha, candidate_k, run_eval(model, task_name, config, options, progress=say,
                                                            retriever=retriever)))
    return cells


def best_cell(cells: list[SweepCell], history_index: int = 0) -> int:
    """Index of the cell with the highest main score (the first one on a tie)."""
    scores = [c.results[history_index].scores[c.results[history_index].main_score_key] for c in cells]
    return max(range(len(cells)), key=lambda i: (scores[i], -i))
