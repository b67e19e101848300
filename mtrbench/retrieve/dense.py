"""Dense bi-encoder retrieval through sentence-transformers, with each model's own prompts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from mtrbench.data.model import Corpus
from mtrbench.errors import MtrbenchError
from mtrbench.hub import hub_error, hub_reachable
from mtrbench.retrieve.base import Hits
from mtrbench.retrieve.registry import ModelSpec
from mtrbench.search.exact import exact_search

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def pick_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise MtrbenchError(f"--device {device}: no CUDA device is available here (use --device cpu)")
    return device


def pick_dtype(dtype: str, device: str) -> str:
    if dtype == "auto":
        return "bf16" if device.startswith("cuda") else "fp32"
    if dtype not in DTYPES:
        raise MtrbenchError(f"--dtype must be auto, fp32, fp16 or bf16, got '{dtype}'")
    return dtype


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
    return str(module.get_model_path()), "sentence-transformers/all-MiniLM-L6-v2", f"{module_name.replace('_', '-')}-{version}"


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


class DenseRetriever:
    def __init__(self, spec: ModelSpec, *, device: str = "auto", dtype: str = "auto", batch_size: int = 32,
                 max_length: int | None = None, trust_remote_code: bool = False, revision: str | None = None,
                 show_progress: bool = True) -> None:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()

        self.spec = spec
        self.device = pick_device(device)
        self.dtype = pick_dtype(dtype, self.device)
        self.batch_size = batch_size
        self.show_progress = show_progress
        if spec.needs_remote_code and not trust_remote_code:
            raise MtrbenchError(f"model '{spec.alias}' runs code from its repository; "
                                f"pass --trust-remote-code if you trust {spec.model_id}")
        revision = revision or spec.revision
        if spec.model_id.startswith("package:"):
            path, self.name, self.revision = _packaged_model(spec.model_id.split(":", 1)[1])
            load_from, local_only = path, True
        else:
            load_from = spec.model_id
            local_only = Path(load_from).expanduser().exists() or not hub_reachable()
            self.name = spec.model_id if not Path(load_from).expanduser().exists() else Path(load_from).resolve().name
        try:
            model = SentenceTransformer(load_from, device=self.device, revision=revision, local_files_only=local_only,
                                        trust_remote_code=trust_remote_code)
        except (OSError, ValueError) as exc:
            if Path(load_from).expanduser().exists():
                raise MtrbenchError(f"could not load model from {load_from}: {str(exc).splitlines()[0]}") from None
            raise hub_error(spec.model_id, revision, kind="model", what="model") from None
        if not spec.model_id.startswith("package:"):
            self.revision = (_snapshot_revision(spec.model_id, revision)
                             if not Path(load_from).expanduser().exists() else "local")
        if self.dtype != "fp32":
            model.to(DTYPES[self.dtype])
        if max_length:
            model.max_seq_length = max_length
        self.model = model
        self.max_length = model.max_seq_length
        self.tokenizer = model.tokenizer
        self.query_prompt = spec.query_prompt
        if spec.query_prompt_name:
            if spec.query_prompt_name not in (model.prompts or {}):
                raise MtrbenchError(f"model {spec.model_id} defines no prompt '{spec.query_prompt_name}'")
            self.query_prompt = model.prompts[spec.query_prompt_name]
        self.doc_prompt = spec.doc_prompt
        self._doc_emb: torch.Tensor | None = None
        self._normalize = (getattr(model, "similarity_fn_name", None) or "cosine") == "cosine"

    def settings(self) -> dict[str, Any]:
        return {"kind": "dense", "query_prompt": self.query_prompt, "doc_prompt": self.doc_prompt,
                "max_length": self.max_length, "dtype": self.dtype, "similarity": "cosine" if self._normalize else "dot",
                "device": self.device, "batch_size": self.batch_size}

    def _encode(self, texts: list[str], prompt: str, desc: str) -> torch.Tensor:
        emb = self.model.encode(texts, prompt=prompt or None, batch_size=self.batch_size, convert_to_tensor=True,
                                normalize_embeddings=self._normalize, show_progress_bar=self.show_progress and len(texts) > self.batch_size)
        return emb

    def index(self, corpus: Corpus) -> None:
        texts = [corpus.document_text(i) for i in range(len(corpus))]
        self._doc_emb = self._encode(texts, self.doc_prompt, "corpus")

    def search(self, queries: list[str], top_k: int, candidates: list[list[int] | None] | None = None) -> Hits:
        if self._doc_emb is None:
            raise RuntimeError("index() the corpus before searching")
        q = self._encode(queries, self.query_prompt, "queries").to(self._doc_emb.dtype)
        return exact_search(q, self._doc_emb, top_k, candidates)
