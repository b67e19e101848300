"""Dense bi-encoder retrieval: sentence-transformers models with each model's own prompts, encoded by
mtrbench's engine (or an actor pool of it on Ray), corpus embeddings cached on disk, exact search on the
model's device - or, for corpora past one device (docs/scale.md), sharded over Ray workers, streamed
from the cache in a bounded footprint, or approximate with faiss when asked for."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import torch

from mtrbench.data.model import Corpus
from mtrbench.encode.cache import CacheKey, CacheReport, EmbeddingCache, corpus_fingerprint
from mtrbench.encode.distributed import RayEncoder, RaySettings, connect, ray_module
from mtrbench.encode.engine import EncodingEngine, EngineOptions
from mtrbench.encode.towers import SENTENCE_TRANSFORMERS, SentenceTransformerTower, TowerSpec, load_tower
from mtrbench.infra.errors import MtrbenchError
from mtrbench.models.loading import ModelSource, NamedSource, pick_devices, pick_dtype
from mtrbench.retrieve.options import LoadingOptions, ScaleOptions
from mtrbench.retrieve.registry import ModelSpec
from mtrbench.search.approximate import FaissIndex, IndexSpec
from mtrbench.search.exact import exact_search
from mtrbench.search.hits import Hits
from mtrbench.search.sharded import sharded_search
from mtrbench.search.streaming import entry_shards
from mtrbench.serialize.instructions import InstructionRequest, choose_prompts, unused_checkpoint_prompts

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)


class EmbeddingRetriever:
    """Index/search shared by single- and dual-tower retrievers: corpus embeddings (cached), exact search."""

    name: str
    revision: str
    tokenizer: Any
    max_length: int | None
    query_prompt: str = ""
    doc_prompt: str = ""
    normalize: bool = False
    query_engine: EncodingEngine
    doc_engine: EncodingEngine
    doc_source: ModelSource

    def _setup_common(self, loading: LoadingOptions, scale: ScaleOptions) -> None:
        self.device, self.devices = pick_devices(loading.device)
        self.dtype = pick_dtype(loading.dtype, self.device)
        batch_size, token_budget = loading.batch_size, loading.token_budget
        if batch_size is not None and batch_size < 1 or token_budget is not None and token_budget < 1:
            raise MtrbenchError("--batch-size and --token-budget must be positive")
        self.engine_options = EngineOptions(
            token_budget=token_budget, max_batch_size=batch_size, unpad=loading.unpad, mode=loading.engine_mode
        )
        self.batch_size = batch_size
        self.show_progress = loading.show_progress
        self.cache = EmbeddingCache(loading.cache_dir) if loading.use_cache else None
        self.cache_report: CacheReport | None = None
        self._doc_emb: torch.Tensor | None = None
        self._setup_scale(scale.ray, scale.ray_workers, scale.search_memory, scale.index)

    def _setup_scale(
        self, ray: str | None, ray_workers: int | None, search_memory: int | None, index: str | None
    ) -> None:
        self.ray = RaySettings(address=None if ray == "local" else ray, workers=ray_workers) if ray else None
        self.search_memory = search_memory
        self.index_spec = IndexSpec.parse(index)
        if ray_workers is not None and ray_workers < 1:
            raise MtrbenchError("--ray-workers must be positive")
        if search_memory is not None and search_memory < 1:
            raise MtrbenchError("--search-memory must be positive")
        if self.index_spec.approximate and (search_memory or ray):
            raise MtrbenchError(
                "--index faiss:... searches in memory on this machine; it does not combine with "
                "--search-memory or --ray"
            )
        if (search_memory or ray) and not self.cache:
            raise MtrbenchError(
                "--search-memory and --ray search the corpus embeddings from the embedding cache; drop --no-cache"
            )
        self._shards = None  # streamed or sharded search: the cache entry's shards
        self._faiss = None

    def pipeline_slug(self) -> dict[str, Any]:
        """An approximate index names the experiment, so its results never overwrite exact ones."""
        return {"index": self.index_spec.describe()} if self.index_spec.approximate else {}

    def _search_settings(self) -> dict[str, Any]:
        """What decides the ranking: exact search, or an approximate index and its parameters."""
        if self._faiss is not None:
            return self._faiss.settings()
        return {"index": "exact", "approximate": False}

    def _search_execution(self) -> dict[str, Any]:
        """How exact search ran (in memory, streamed under a cap, sharded over Ray): the same run either way, so
        it is execution-only, never part of a result's identity."""
        mode = "sharded" if self.ray else "streaming" if self.search_memory else "in-memory"
        return {"mode": mode, "search_memory": self.search_memory, **({"ray": self.ray.describe()} if self.ray else {})}

    def _engine_settings(self) -> dict[str, Any]:
        engine = self.doc_engine.settings()
        return {
            "dtype": self.dtype,
            "similarity": "cosine" if self.normalize else "dot",
            "device": self.device,
            "batch_size": self.batch_size,
            "token_budget": engine["token_budget"],
            "packed": engine["packed"],
            # only when not eager: results written before engine modes existed (and every CPU run) were eager
            **({"engine_mode": engine["mode"]} if engine.get("mode", "eager") != "eager" else {}),
            "embedding_cache": "on" if self.cache is not None else "off",
            "search": self._search_settings(),
            "search_execution": self._search_execution(),
        }

    def index(self, corpus: Corpus) -> None:
        texts = [corpus.document_text(i) for i in range(len(corpus))]

        def encode(todo: list[str], sizes: list[int] | None = None, on_chunk=None) -> torch.Tensor:
            return self.doc_engine.encode(
                todo,
                self.doc_prompt,
                self.normalize,
                show_progress=self.show_progress,
                desc="Encoding corpus",
                chunk_sizes=sizes,
                on_chunk=on_chunk,
            )

        if self.cache is None:
            self._doc_emb = encode(texts)
            self._build_index()
            return
        tower = self.doc_engine.tower
        key = CacheKey(
            model=self.doc_source.name,
            revision=self.doc_source.cache_revision,
            prompt=self.doc_prompt,
            pipeline=tower.signature(),
            normalize=self.normalize,
            max_length=tower.max_length,
            dtype=self.dtype,
            corpus=corpus_fingerprint(corpus.ids, texts),
            n_docs=len(texts),
        )
        n_devices = len(getattr(self.doc_engine, "devices", None) or [self.doc_engine.device])
        block_device = self.doc_engine.device
        if self.ray is not None:
            connect(self.ray)
            encode = RayEncoder(
                tower.spec, self.engine_options, self.ray, self.doc_prompt, self.normalize, self.show_progress
            )
            # one block per actor call: the engine's block for the actors' device type
            block_device, n_devices = ("cuda" if ray_module().cluster_resources().get("GPU") else "cpu"), 1
        streamed = self.ray is not None or self.search_memory is not None
        embeddings, self.cache_report = self.cache.load_or_encode(
            key,
            texts,
            encode,
            device=self.doc_engine.device,
            n_devices=n_devices,
            block_device=block_device,
            keep=not streamed,
        )
        if self.cache_report.corrupt:
            log.warning(
                "embedding cache: %d corrupt shard(s) re-encoded (%s)",
                self.cache_report.corrupt,
                "; ".join(self.cache_report.messages),
            )
        if streamed:
            self._shards = entry_shards(self.cache.entry_folder(key))
            self._doc_emb = embeddings  # empty: the shards stay on disk
            return
        self._doc_emb = embeddings
        self._build_index()

    def _build_index(self) -> None:
        if self.index_spec.approximate:
            self._faiss = FaissIndex(self.index_spec, self._doc_emb)

    @property
    def corpus_embeddings(self) -> torch.Tensor:
        """The indexed corpus's embeddings, one row per document in corpus order."""
        if self._doc_emb is None:
            raise RuntimeError("index() the corpus first")
        return self._doc_emb

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        if self._doc_emb is None:
            raise RuntimeError("index() the corpus before searching")
        q = self.query_engine.encode(
            queries, self.query_prompt, self.normalize, show_progress=self.show_progress, desc="Encoding queries"
        )
        if self._shards is None and self._faiss is None:
            return exact_search(q.to(self._doc_emb.device, self._doc_emb.dtype), self._doc_emb, top_k, candidates)
        if candidates is not None and any(pool is not None for pool in candidates):
            raise MtrbenchError(
                "candidate pools (--chunking --rank-parents, hybrid legs) need the in-memory exact "
                "search: drop --search-memory, --ray and --index"
            )
        if self._faiss is not None:
            scores, ids = self._faiss.search(q, top_k)
        else:
            workers = (self.ray.workers or 0) if self.ray else 1
            if self.ray and not workers:
                workers = max(1, int(ray_module().cluster_resources().get("GPU", 0)) or 2)
            scores, ids = sharded_search(
                q, self._shards, top_k, workers, self.search_memory, use_ray=self.ray is not None
            )
        return [
            ([int(i) for i in row_i if i >= 0], [float(s) for s, i in zip(row_s, row_i) if i >= 0])
            for row_s, row_i in zip(scores.tolist(), ids.tolist())
        ]


class DenseRetriever(EmbeddingRetriever):
    def __init__(
        self,
        spec: ModelSpec,
        loading: LoadingOptions | None = None,
        scale: ScaleOptions | None = None,
    ) -> None:
        loading, scale = loading or LoadingOptions(), scale or ScaleOptions()
        if loading.pooling or loading.similarity:
            raise MtrbenchError(
                "--pooling and --similarity apply to dual encoders (--query-model/--doc-model); "
                f"'{spec.alias}' uses the pooling and similarity its sentence-transformers config sets"
            )
        self.spec = spec
        self._setup_common(loading, scale)
        trust_remote_code, max_length = loading.trust_remote_code, loading.max_length
        if spec.needs_remote_code and not trust_remote_code:
            raise MtrbenchError(
                f"model '{spec.alias}' runs code from its repository; "
                f"pass --trust-remote-code if you trust {spec.model_id}"
            )
        if not spec.query_prompt_name:  # a bad template or --instruction fails before the model loads
            request = InstructionRequest(loading.instruction, loading.instruction_template)
            choose_prompts(spec.query_prompt, spec.doc_prompt, spec.instruction_template, request, {}, None, spec.alias)
        source = ModelSource(spec.model_id, loading.revision or spec.revision)
        tower = load_tower(
            TowerSpec(
                SENTENCE_TRANSFORMERS,
                source.location,
                source.requested_revision,
                source.local_only,
                trust_remote_code,
                max_length,
                dtype=self.dtype,
                append_eos=spec.append_eos,
            ),
            self.device,
        )
        source.resolve_revision()
        self._adopt(tower, source, loading)

    @classmethod
    def from_sentence_transformer(
        cls, model: SentenceTransformer, name: str, revision: str | None, loading: LoadingOptions, scale: ScaleOptions
    ) -> DenseRetriever:
        """A sentence-transformers model object the user loaded: mtrbench's engine encodes with it. Its corpus
        embeddings are cached only under a given ``revision`` (the object's weights are not fingerprinted)."""
        self = cls.__new__(cls)
        self.spec = ModelSpec(name, "dense", model_id=name, description="a sentence-transformers object")
        self._setup_common(loading, scale)
        if revision is None:
            self.cache = None
        if loading.max_length:
            model.max_seq_length = loading.max_length
        model.to(self.device)
        spec = TowerSpec(SENTENCE_TRANSFORMERS, name, revision, True, False, loading.max_length, dtype=self.dtype)
        self._adopt(SentenceTransformerTower(model, spec), NamedSource(name, revision), loading)
        return self

    def _adopt(
        self, tower: SentenceTransformerTower, source: ModelSource | NamedSource, loading: LoadingOptions
    ) -> None:
        self.doc_source = source
        self.name, self.revision = source.name, source.revision
        self.query_engine = self.doc_engine = EncodingEngine(tower, self.engine_options, self.devices)
        model = tower.model
        self.model = model
        self.max_length = model.max_seq_length
        self.tokenizer = model.tokenizer
        self._adopt_prompts(model, loading)
        self.normalize = (getattr(model, "similarity_fn_name", None) or "cosine") == "cosine"

    def _adopt_prompts(self, model: SentenceTransformer, loading: LoadingOptions) -> None:
        """The alias's prompts, an instruction template filled with the task description, or the checkpoint's
        own named prompts as ``encode_query`` / ``encode_document`` pick them (serialize/instructions.py)."""
        spec = self.spec
        checkpoint = {name: text or "" for name, text in (model.prompts or {}).items()}
        alias_query = spec.query_prompt
        if spec.query_prompt_name:
            if spec.query_prompt_name not in checkpoint:
                raise MtrbenchError(f"model {spec.model_id} defines no prompt '{spec.query_prompt_name}'")
            alias_query = checkpoint[spec.query_prompt_name]
        self.prompts = choose_prompts(
            alias_query,
            spec.doc_prompt,
            spec.instruction_template,
            InstructionRequest(loading.instruction, loading.instruction_template),
            checkpoint,
            getattr(model, "default_prompt_name", None),
            spec.alias,
        )
        self.query_prompt, self.doc_prompt = self.prompts.query, self.prompts.doc
        unused = unused_checkpoint_prompts(self.prompts, checkpoint)
        if unused:
            log.warning(
                "model %s defines prompt(s) %s but is evaluated with none: its scores are not the model's as "
                "trained (an alias with query_prompt_name, or --instruction-template, applies one)",
                spec.alias,
                ", ".join(repr(name) for name in unused),
            )

    def settings(self) -> dict[str, Any]:
        return {
            "kind": "dense",
            "query_prompt": self.query_prompt,
            "doc_prompt": self.doc_prompt,
            **self.prompts.recorded(),
            **({"append_eos": True} if self.spec.append_eos else {}),
            "max_length": self.max_length,
            **self._engine_settings(),
        }
