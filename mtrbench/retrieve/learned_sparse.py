"""Learned sparse retrieval (SPLADE, DiSCo): sentence-transformers ``SparseEncoder`` checkpoints kept sparse end
to end. Texts are encoded with the checkpoint's own ``encode_query`` / ``encode_document`` into CSR matrices
(``encode.sparse``), the corpus's matrix is cached on disk (``encode.sparse_cache``), and queries are ranked by
sparse dot product, exactly (``search.sparse_exact``) or through a seismic inverted index when asked for
(``--index seismic...``, ``search.inverted``). Memory follows the non-zeros: no ``n x vocabulary`` dense matrix.

``spec.model_id`` encodes queries; ``spec.doc_model_id``, when set, is a different document encoder (DiSCo's
conversational query encoder with a SPLADE document encoder); both must share one vocabulary.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mtrbench.data.hub import hub_error
from mtrbench.data.model import Corpus
from mtrbench.encode.cache import CacheKey, CacheReport, corpus_fingerprint
from mtrbench.encode.sparse import (
    DEFAULT_BATCH_SIZE,
    DOCUMENT,
    QUERY,
    SparseEncoding,
    encode_sparse,
    vocabulary_size,
)
from mtrbench.encode.sparse_cache import SparseCache
from mtrbench.encode.towers import DTYPES
from mtrbench.infra.errors import ModelError, UserInputError, first_line
from mtrbench.models.loading import ModelSource, pick_device, pick_dtype
from mtrbench.models.spec import ModelSpec
from mtrbench.retrieve.options import LoadingOptions, ScaleOptions
from mtrbench.search.hits import Hits
from mtrbench.search.inverted import InvertedSpec, SeismicSearcher
from mtrbench.search.sparse_exact import inverted, score_pool, sparse_search

if TYPE_CHECKING:
    import scipy.sparse as sp
    from sentence_transformers import SparseEncoder

log = logging.getLogger(__name__)

KIND = "learned-sparse"  # results' "kind"; BM25 keeps "sparse" there, as results written before kinds had names
ENCODER = "sentence-transformers SparseEncoder (mtrbench's packed engine has no MLM-head path yet)"


def load_sparse_encoder(source: ModelSource, device: str, trust_remote_code: bool) -> SparseEncoder:
    """A ``SparseEncoder`` from a local folder or the Hub; failures become one line."""
    from sentence_transformers import SparseEncoder

    try:
        return SparseEncoder(
            source.location,
            device=device,
            revision=source.requested_revision,
            local_files_only=source.local_only,
            trust_remote_code=trust_remote_code,
        )
    except (OSError, ValueError) as exc:
        if Path(source.location).expanduser().exists():
            raise ModelError(f"could not load sparse model from {source.location}: {first_line(exc)}") from None
        raise hub_error(source.location, source.requested_revision, kind="model", what="model") from None


def check_options(spec: ModelSpec, loading: LoadingOptions, scale: ScaleOptions) -> InvertedSpec:
    """The options a learned sparse model cannot take, each one ``error:`` line; the parsed ``--index``."""
    index = (scale.index or "").strip()
    if index.startswith("faiss"):
        raise UserInputError(
            f"--index {index}: '{spec.alias}' is a learned sparse model, and faiss indexes dense vectors; "
            "use --index exact (the default) or --index seismic[:name=value,...]"
        )
    if scale.ray or scale.ray_workers or scale.search_memory:
        raise UserInputError(
            f"--ray and --search-memory apply to dense models; '{spec.alias}' is a learned sparse model, searched "
            "in memory bounded by its non-zeros (use --index seismic for a large corpus)"
        )
    if loading.pooling or loading.similarity:
        raise UserInputError(
            f"--pooling and --similarity apply to dual encoders; '{spec.alias}' is a learned sparse model "
            "(its own pooling, sparse dot product)"
        )
    if spec.needs_remote_code and not loading.trust_remote_code:
        raise UserInputError(
            f"model '{spec.alias}' runs code from its repository; pass --trust-remote-code if you trust {spec.model_id}"
        )
    top_k = loading.sparse_top_k
    if top_k is not None and top_k < 1:
        raise UserInputError(f"--sparse-top-k must be a positive integer, got {top_k}")
    if loading.batch_size is not None and loading.batch_size < 1:
        raise UserInputError("--batch-size must be positive")
    return InvertedSpec.parse(index or None)


def same_vocabulary(query_model: SparseEncoder, doc_model: SparseEncoder, names: tuple[str, str]) -> None:
    """Query and document vectors are dotted term by term: both encoders must index one vocabulary."""
    dims = (vocabulary_size(query_model), vocabulary_size(doc_model))
    same = dims[0] == dims[1] and query_model.tokenizer.get_vocab() == doc_model.tokenizer.get_vocab()
    if not same:
        raise UserInputError(
            f"query encoder {names[0]} ({dims[0]} terms) and document encoder {names[1]} ({dims[1]} terms) have "
            "different vocabularies: their sparse vectors cannot be compared"
        )


def modules_signature(model: SparseEncoder) -> list[dict[str, Any]]:
    """The modules after the transformer, with their plain settings (what turns logits into weights)."""
    described = []
    for module in list(model)[1:]:
        config = module.get_config_dict() if hasattr(module, "get_config_dict") else {}
        plain = {k: v for k, v in config.items() if isinstance(v, (str, int, float, bool, type(None)))}
        described.append({"module": type(module).__name__, **plain})
    return described


class LearnedSparseRetriever:
    """The Retriever protocol (retrieve/base.py) for SparseEncoder checkpoints."""

    def __init__(self, spec: ModelSpec, loading: LoadingOptions | None = None, scale: ScaleOptions | None = None):
        loading, scale = loading or LoadingOptions(), scale or ScaleOptions()
        self.spec = spec
        self.index_spec = check_options(spec, loading, scale)
        self.device = pick_device(loading.device)
        self.dtype = pick_dtype(loading.dtype, self.device)
        self.pruning: int | None = loading.sparse_top_k
        self.batch_size = loading.batch_size or DEFAULT_BATCH_SIZE
        self.show_progress = loading.show_progress
        self.cache = SparseCache(loading.cache_dir) if loading.use_cache else None
        self.cache_report: CacheReport | None = None
        revision = loading.revision or spec.revision
        self.query_source = ModelSource(spec.model_id, revision)
        self.query_model = self._load(self.query_source, loading)
        if spec.doc_model_id and spec.doc_model_id != spec.model_id:
            self.doc_source = ModelSource(spec.doc_model_id, revision)
            self.doc_model = self._load(self.doc_source, loading)
            same_vocabulary(self.query_model, self.doc_model, (spec.model_id, spec.doc_model_id))
        else:
            self.doc_source, self.doc_model = self.query_source, self.query_model
        self.name, self.revision = self.query_source.name, self.query_source.revision
        self.tokenizer = self.query_model.tokenizer
        self.max_length: int | None = self.query_model.max_seq_length  # the query encoder's: truncation keeps it
        self.query_prompt = (self.query_model.prompts or {}).get(QUERY, "")
        self.doc_prompt = (self.doc_model.prompts or {}).get(DOCUMENT, "")
        self._docs: sp.csr_matrix | None = None
        self._seismic: SeismicSearcher | None = None
        self._by_term: sp.csr_matrix | None = None  # exact search's inverted matrix, built once per corpus

    def _load(self, source: ModelSource, loading: LoadingOptions) -> SparseEncoder:
        model = load_sparse_encoder(source, self.device, loading.trust_remote_code)
        source.resolve_revision()
        if self.dtype != "fp32":
            model.to(DTYPES[self.dtype])
        if loading.max_length:
            model.max_seq_length = loading.max_length
        return model

    def _encoding(self, side: str) -> SparseEncoding:
        return SparseEncoding(side, top_k=self.pruning, batch_size=self.batch_size)

    def pipeline_slug(self) -> dict[str, Any]:
        """An approximate index and pruning name the experiment, so their results never overwrite exact ones."""
        slug: dict[str, Any] = {"index": self.index_spec.describe()} if self.index_spec.approximate else {}
        return {**slug, **({"sparse_top_k": self.pruning} if self.pruning else {})}

    def settings(self) -> dict[str, Any]:
        search = (
            self._seismic.settings() if self._seismic else {"index": self.index_spec.describe(), "approximate": False}
        )
        return {
            "kind": KIND,
            "query_model": self.query_source.name,
            "doc_model": self.doc_source.name,
            "doc_revision": self.doc_source.revision,
            "query_prompt": self.query_prompt,
            "doc_prompt": self.doc_prompt,
            "max_length": self.max_length,
            "doc_max_length": self.doc_model.max_seq_length,
            "sparse_top_k": self.pruning,
            "similarity": "dot (sparse)",
            "modules": modules_signature(self.doc_model),
            "encoder": ENCODER,
            "dtype": self.dtype,
            "device": self.device,
            "batch_size": self.batch_size,
            "embedding_cache": "on" if self.cache is not None else "off",
            "search": search,
        }

    def encode(self, texts: list[str], side: str, desc: str) -> sp.csr_matrix:
        model = self.query_model if side == QUERY else self.doc_model
        return encode_sparse(model, texts, self._encoding(side), show_progress=self.show_progress, desc=desc)

    def index(self, corpus: Corpus) -> None:
        texts = [corpus.document_text(i) for i in range(len(corpus))]

        def encode() -> sp.csr_matrix:
            return self.encode(texts, DOCUMENT, "Encoding corpus (sparse)")

        if self.cache is None:
            self._docs = encode()
        else:
            key = CacheKey(
                model=self.doc_source.name,
                revision=self.doc_source.cache_revision,
                prompt=self.doc_prompt,
                pipeline={"kind": KIND, "modules": modules_signature(self.doc_model), "top_k": self.pruning},
                normalize=False,
                max_length=int(self.doc_model.max_seq_length or 0),
                dtype=self.dtype,
                corpus=corpus_fingerprint(corpus.ids, texts),
                n_docs=len(texts),
            )
            self._docs, self.cache_report = self.cache.load_or_encode(key, encode, vocabulary_size(self.doc_model))
        self._seismic = SeismicSearcher(self.index_spec, self._docs) if self.index_spec.approximate else None
        self._by_term = None if self._seismic else inverted(self._docs)

    @property
    def corpus_vectors(self) -> sp.csr_matrix:
        """The indexed corpus's sparse vectors, one CSR row per document in corpus order."""
        if self._docs is None:
            raise RuntimeError("index() the corpus first")
        return self._docs

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        docs = self.corpus_vectors
        vectors = self.encode(queries, QUERY, "Encoding queries (sparse)")
        if self._seismic is None:
            return sparse_search(vectors, docs, top_k, candidates, by_term=self._by_term)
        pools = candidates or [None] * len(queries)
        free = [i for i, pool in enumerate(pools) if pool is None]
        hits: Hits = [([], []) for _ in queries]
        for i, found in zip(free, self._seismic.search(vectors[free], top_k) if free else []):
            hits[i] = found
        for i, pool in enumerate(pools):
            if pool:
                hits[i] = score_pool(vectors[i], docs, np.asarray(pool, dtype=np.int64), top_k)
        return hits
