"""Retrievers around model objects a user brings from Python (``models/protocols.py``).

Encoders become :class:`EmbeddingRetriever`s, so the embedding cache, exact, streamed and sharded search and
every measure apply unchanged; a search object answers runs that are mapped back onto the corpus.
"""

from __future__ import annotations

import inspect
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from mtrbench.data.model import ConversationalQuery, Corpus
from mtrbench.infra.errors import ModelError, UserInputError
from mtrbench.infra.numeric import finite, finite_matrix
from mtrbench.infra.reporting import progress_bar
from mtrbench.models.loading import NamedSource
from mtrbench.models.protocols import (
    Conversation,
    ConversationEncoder,
    Embeddings,
    Encoder,
    SearchRetriever,
    object_name,
)
from mtrbench.retrieve.base import Retriever
from mtrbench.retrieve.dense import DenseRetriever, EmbeddingRetriever
from mtrbench.retrieve.options import LoadingOptions, ScaleOptions
from mtrbench.search.hits import Hits

log = logging.getLogger(__name__)

DEFAULT_OBJECT_BATCH = 64  # texts per call to the user's encode method when no --batch-size is set
SIMILARITIES = ("cosine", "dot")
SHAPES = (
    "a sentence-transformers model, an object with encode_queries(texts) and encode_corpus(docs), one with "
    "encode_conversations(conversations) and encode_corpus(docs), or one with search(queries, top_k)"
)


def _accepts(method: Callable[..., object], keyword: str) -> bool:
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == keyword or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def as_matrix(values: Embeddings, rows: int, what: str) -> torch.Tensor:
    """The user's embeddings as a float32 CPU matrix of ``rows`` rows, or one ``error:`` line saying why not."""
    try:
        if isinstance(values, torch.Tensor):
            matrix = values.detach().to("cpu", torch.float32)
        else:
            matrix = torch.as_tensor(np.asarray(values, dtype=np.float32))
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{what} returned something that is not a matrix of numbers ({exc})") from None
    if matrix.ndim != 2 or matrix.shape[0] != rows:
        raise ModelError(f"{what} returned shape {tuple(matrix.shape)} for {rows} inputs; expected ({rows}, dim)")
    finite_matrix(matrix, f"{what} returned NaN or infinite values", ModelError)
    return matrix


def _wrapped_encoder(model: object) -> object | None:
    """A sentence-transformers-like model held in one of ``model``'s attributes (``.tokenizer`` and an integer
    ``.max_seq_length``): the encoder a wrapper object hands its texts to, which cuts them at that length."""
    for value in getattr(model, "__dict__", {}).values():
        if getattr(value, "tokenizer", None) is not None and isinstance(getattr(value, "max_seq_length", None), int):
            return value
    return None


def length_limit(model: object, name: str, warn: bool = True) -> tuple[object | None, int | None]:
    """(tokenizer, max length) that queries are truncated with: the object's own ``tokenizer`` and ``max_length``,
    else those of the sentence-transformers model it wraps (which would cut long queries itself, from the right,
    unrecorded). Without a tokenizer queries go whole, with a warning (``warn``, for encoders: a search object
    answers from its own index, often without any token limit): mtrbench cannot count what the object cuts."""
    inner = _wrapped_encoder(model)
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None and inner is not None:
        tokenizer = inner.tokenizer  # type: ignore[attr-defined]
        log.info("%s: truncating queries with the tokenizer of the %s it holds", name, type(inner).__name__)
    if tokenizer is None:
        if not warn:
            return None, None
        log.warning(
            "%s has no tokenizer: queries go to it whole and the result records no truncation; if it cuts long "
            "inputs itself, give it `tokenizer` and `max_length` attributes so mtrbench truncates and counts",
            name,
        )
        return None, None
    for source in (model, inner):
        for attribute in ("max_length", "max_seq_length"):
            value = getattr(source, attribute, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return tokenizer, value
    return tokenizer, None


class _ObjectTower:
    """What the embedding cache asks of a tower: a signature and a length limit."""

    def __init__(self, signature: dict[str, Any], max_length: int | None) -> None:
        self._signature, self.max_length = signature, max_length

    def signature(self) -> dict[str, Any]:
        return self._signature


class ObjectEngine:
    """Encodes through one method of the user's object, in batches, with a progress bar; the interface
    ``EmbeddingRetriever`` and the embedding cache use (``encode``, ``device``, ``tower``, ``settings``)."""

    device = "cpu"

    def __init__(
        self,
        method: Callable[..., Embeddings],
        inputs_of: Callable[[list[object]], list[object]],
        batch_size: int,
        what: str,
        tower: _ObjectTower,
    ) -> None:
        self.method, self.inputs_of, self.batch_size, self.what, self.tower = method, inputs_of, batch_size, what, tower
        self._pass_batch_size = _accepts(method, "batch_size")
        self.dim: int | None = None
        self._dim_source = "ones"  # what set ``dim``: this method's earlier vectors, or the corpus embeddings

    def expect_width(self, dim: int, source: str) -> None:
        """Vectors of any other width are refused: a query compared with a corpus of another width."""
        self.dim, self._dim_source = dim, source

    def settings(self) -> dict[str, Any]:
        return {"token_budget": None, "packed": False}

    def encode(
        self,
        items: Sequence[object],
        prompt: str = "",
        normalize: bool = False,
        show_progress: bool = False,
        desc: str = "Encoding",
        chunk_sizes: Sequence[int] | None = None,
        on_chunk: Callable[[int, torch.Tensor], None] | None = None,
    ) -> torch.Tensor:
        items = list(items)
        sizes = list(chunk_sizes) if chunk_sizes is not None else [len(items)]
        parts: list[torch.Tensor] = []
        with progress_bar(total=len(items), desc=desc, unit="text", show_progress=show_progress, leave=False) as bar:
            start = 0
            for index, size in enumerate(sizes):
                chunk = [
                    self._batch(items[s : s + self.batch_size], bar)
                    for s in range(start, start + size, self.batch_size)
                ]
                block = torch.cat(chunk) if chunk else torch.empty(0, self.dim or 0)
                if normalize:
                    block = torch.nn.functional.normalize(block, dim=-1)
                if on_chunk is not None:
                    on_chunk(index, block)
                parts.append(block)
                start += size
        return torch.cat(parts) if parts else torch.empty(0, self.dim or 0)

    def _batch(self, items: list[object], bar: tqdm) -> torch.Tensor:
        inputs = self.inputs_of(items)
        reply = self.method(inputs, batch_size=len(inputs)) if self._pass_batch_size else self.method(inputs)
        matrix = as_matrix(reply, len(inputs), self.what)
        if self.dim is None:
            self.dim = matrix.shape[1]
        elif matrix.shape[1] != self.dim:
            raise ModelError(
                f"{self.what} returned {matrix.shape[1]}-dimensional vectors after {self.dim}-dimensional "
                f"{self._dim_source}"
            )
        bar.update(len(items))
        return matrix


class EncoderObjectRetriever(EmbeddingRetriever):
    """An :class:`Encoder` or :class:`ConversationEncoder` object as a dense retriever."""

    def __init__(self, model: Encoder | ConversationEncoder, loading: LoadingOptions, scale: ScaleOptions) -> None:
        if scale.ray:
            raise UserInputError("--ray encodes with named models in Ray actors; a Python encoder object runs here")
        self.model = model
        self.reads_conversations = isinstance(model, ConversationEncoder)
        self._setup_common(loading, scale)
        self.dtype = "fp32"  # the object's own vectors, as float32: never cast by a device default
        name, revision = object_name(model), getattr(model, "revision", None)
        self.doc_source = NamedSource(name, revision if isinstance(revision, str) and revision else None)
        if self.doc_source.requested_revision is None:
            self.cache = None  # nothing tells a changed object from the one that filled the cache
        self.name, self.revision = self.doc_source.name, self.doc_source.revision
        self.similarity = getattr(model, "similarity", "cosine") or "cosine"
        if self.similarity not in SIMILARITIES:
            raise ModelError(f"{name}: similarity must be 'cosine' or 'dot', got {self.similarity!r}")
        self.normalize = self.similarity == "cosine"
        if self.reads_conversations:
            self.tokenizer, self.max_length = None, None
        else:
            self.tokenizer, self.max_length = length_limit(model, name)
        self.query_prompt = str(getattr(model, "query_prompt", "") or "")
        self.doc_prompt = str(getattr(model, "doc_prompt", "") or "")
        batch = loading.batch_size or DEFAULT_OBJECT_BATCH
        tower = _ObjectTower({"object": name, "similarity": self.similarity}, self.max_length)
        self._documents: dict[str, dict[str, str]] = {}
        self.doc_engine = ObjectEngine(
            model.encode_corpus, self._document_inputs, batch, f"{name}.encode_corpus", tower
        )
        if self.reads_conversations:
            self.query_engine = ObjectEngine(
                model.encode_conversations, list, batch, f"{name}.encode_conversations", tower
            )
        else:
            self.query_engine = ObjectEngine(model.encode_queries, list, batch, f"{name}.encode_queries", tower)

    def _document_inputs(self, texts: list[str]) -> list[dict[str, str]]:
        return [self._documents[text] for text in texts]

    def index(self, corpus: Corpus) -> None:
        # the cache hands back the texts it needs encoded; each maps to its document as beir passes it
        self._documents = {
            corpus.document_text(i): {"title": corpus.titles[i], "text": corpus.texts[i]} for i in range(len(corpus))
        }
        super().index(corpus)
        embedded = self.corpus_embeddings  # empty when streamed from the cache's shards
        width = int(embedded.shape[1]) if embedded.numel() else self.doc_engine.dim
        if width:
            self.query_engine.expect_width(width, "corpus embeddings")

    def search_queries(
        self,
        queries: list[ConversationalQuery],
        texts: list[str],
        top_k: int,
        candidates: list[list[int] | None] | None = None,
    ) -> Hits:
        """A conversation encoder reads the turns; a text encoder the serialized queries."""
        if not self.reads_conversations:
            return self.search(texts, top_k, candidates)
        return self.search([Conversation.of(q) for q in queries], top_k, candidates)  # type: ignore[arg-type]

    def settings(self) -> dict[str, Any]:
        return {
            "kind": "conversation-encoder" if self.reads_conversations else "encoder",
            "object": self.name,
            "query_prompt": self.query_prompt,
            "doc_prompt": self.doc_prompt,
            "max_length": self.max_length,
            **self._engine_settings(),
        }


class SearchObjectRetriever:
    """A :class:`SearchRetriever` object: it answers runs by document id; ids outside the corpus are dropped and
    counted (``warnings``), each query keeps its ``top_k`` best."""

    reads_conversations = False
    tokenizer: object = None  # a Hugging Face tokenizer when the object brings one (left truncation)
    query_prompt = ""

    def __init__(self, model: SearchRetriever, show_progress: bool = True) -> None:
        self.model = model
        self.name = object_name(model)
        revision = getattr(model, "revision", None)
        self.revision = revision if isinstance(revision, str) and revision else "no_revision_available"
        self.tokenizer, self.max_length = length_limit(model, self.name, warn=False)
        self.show_progress = show_progress
        self.warnings: Counter = Counter()
        self._corpus: Corpus | None = None

    def settings(self) -> dict[str, Any]:
        return {"kind": "search-object", "object": self.name, "max_length": self.max_length}

    def index(self, corpus: Corpus) -> None:
        self._corpus = corpus
        index = getattr(self.model, "index", None)
        if callable(index):
            index({corpus.ids[i]: {"title": corpus.titles[i], "text": corpus.texts[i]} for i in range(len(corpus))})

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        raise UserInputError(
            f"{self.name} answers by query id: it runs as a first stage on its own, not inside "
            "a hybrid, chunking or rerank pipeline"
        )

    def search_queries(
        self,
        queries: list[ConversationalQuery],
        texts: list[str],
        top_k: int,
        candidates: list[list[int] | None] | None = None,
    ) -> Hits:
        if self._corpus is None:
            raise RuntimeError("index() the corpus before searching")
        if candidates is not None and any(pool is not None for pool in candidates):
            raise UserInputError(
                f"{self.name}: the task restricts each query to candidate documents, which a search "
                "object cannot be told; use an encoder object"
            )
        run = self.model.search({q.qid: text for q, text in zip(queries, texts)}, top_k)
        if not isinstance(run, dict):
            raise ModelError(f"{self.name}.search returned {type(run).__name__}; expected {{qid: {{doc_id: score}}}}")
        return [self._hits(run.get(q.qid) or {}, top_k, q.qid) for q in queries]

    def _hits(self, ranked: dict[str, float], top_k: int, qid: str) -> tuple[list[int], list[float]]:
        corpus = self._corpus
        if not isinstance(ranked, dict):
            raise ModelError(
                f"{self.name}.search: query {qid}: got {type(ranked).__name__}; expected {{doc_id: score}}"
            )
        kept = []
        for doc_id, score in ranked.items():
            if str(doc_id) not in corpus:
                self.warnings["retrieved document ids not in the corpus (dropped)"] += 1
                continue
            where = f"{self.name}.search: query {qid}, document {doc_id}"
            kept.append((finite(score, where, "score", ModelError), corpus.position(str(doc_id))))
        kept.sort(key=lambda pair: (-pair[0], pair[1]))
        kept = kept[:top_k]
        return [position for _, position in kept], [score for score, _ in kept]


def retriever_from_object(model: object, loading: LoadingOptions, scale: ScaleOptions) -> Retriever:
    """The retriever for a model object, by the first shape it has (sentence-transformers model, conversation
    encoder, encoder, search object, or an mtrbench retriever already)."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:  # pragma: no cover - a dependency of mtrbench
        SentenceTransformer = ()  # type: ignore[assignment,misc]
    if isinstance(model, SentenceTransformer):
        revision = getattr(model, "revision", None)
        name = (
            getattr(model, "name", None) or getattr(model.model_card_data, "base_model", None) or type(model).__name__
        )
        return DenseRetriever.from_sentence_transformer(
            model, str(name), revision if isinstance(revision, str) else None, loading, scale
        )
    if isinstance(model, (ConversationEncoder, Encoder)):
        return EncoderObjectRetriever(model, loading, scale)
    if isinstance(model, SearchRetriever):
        return SearchObjectRetriever(model, show_progress=loading.show_progress)
    if isinstance(model, Retriever):
        return model
    raise ModelError(f"cannot evaluate a {type(model).__name__}: pass a model name or {SHAPES}")
