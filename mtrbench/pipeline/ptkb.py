"""``--ptkb top:K``: the conversation's personal statements ranked for each turn by an encoder, before the queries
are serialized (mtrbench.serialize.ptkb): the retriever's own sentence-transformers model, or ``top:K@MODEL``'s."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from mtrbench.data.model import TaskData
from mtrbench.infra.errors import UserInputError, first_line
from mtrbench.pipeline.histories import History
from mtrbench.serialize.ptkb import PtkbChoice, SimilarityFn, check_task_has_ptkb, rank_statements

log = logging.getLogger(__name__)


def with_ranked_statements(histories: list[History], task: TaskData, retriever_name: str) -> list[History]:
    """The histories with their ``top:K`` statements ranked (one ranking per encoder); others as they are."""
    rankings: dict[str, dict[str, tuple[str, ...]]] = {}
    out = []
    for history in histories:
        choice = history.strategy.ptkb
        if choice is not None:
            check_task_has_ptkb(choice, task.queries, task.name)
        if choice is None or choice.kind != "top" or choice.ranking is not None:
            out.append(history)
            continue
        encoder = choice.encoder or retriever_name
        if encoder not in rankings:
            rankings[encoder] = rank_statements(task.queries, encoder_similarity(encoder, choice), choice)
        ranked = choice.with_ranking(rankings[encoder])
        out.append(replace(history, strategy=history.strategy.with_ptkb(ranked)))
    return out


def encoder_similarity(name: str, choice: PtkbChoice) -> SimilarityFn:
    """Cosine similarity of a sentence-transformers model's normalized embeddings."""
    try:
        from sentence_transformers import SentenceTransformer  # deferred: loads torch
    except ImportError as exc:  # pragma: no cover - a dependency of mtrbench
        raise UserInputError(f"--ptkb {choice.spec}: sentence-transformers is not installed ({exc})") from None
    log.info("ranking personal statements with %s", name)
    try:
        model = SentenceTransformer(name, device="cpu")
    except (OSError, ValueError) as exc:
        raise UserInputError(
            f"--ptkb {choice.spec}: '{name}' is not a sentence-transformers encoder ({first_line(exc)}); "
            f"name one with top:K@MODEL"
        ) from None

    def similarity(question: str, statements: list[str]) -> Sequence[float]:
        vectors = model.encode([question, *statements], normalize_embeddings=True, convert_to_numpy=True)
        return [float(v) for v in vectors[1:] @ vectors[0]]

    return similarity
