"""What a model alias knows before anything loads: its kind, checkpoint(s), prompts, and mteb-style metadata
(family, size, dimension, context, licence, release, training data) that ``mtrbench models`` shows and results
record beside them."""

from __future__ import annotations

from dataclasses import dataclass

# The kinds of retrieval model (docs/retrievers.md). A kind decides how texts are encoded (one vector, a sparse
# vector over a vocabulary, one vector per token), how they are searched, and that results of two kinds never
# share a folder or a leaderboard rank.
DENSE = "dense"  # one vector per text (sentence-transformers SentenceTransformer)
SPARSE = "sparse"  # a learned sparse vector over the vocabulary (SparseEncoder: SPLADE)
MULTI_VECTOR = "multi-vector"  # one vector per token, MaxSim (MultiVectorEncoder: ColBERT)
CROSS_ENCODER = "cross-encoder"  # scores (query, passage) pairs: a reranking stage only
DUAL = "dual"  # separate raw transformers query and document towers (Dragon, DPR)
HYBRID = "hybrid"  # a dense model and BM25 fused by score
LEXICAL = "lexical"  # BM25
KINDS = (DENSE, SPARSE, MULTI_VECTOR, CROSS_ENCODER, DUAL, HYBRID, LEXICAL)
# Kinds a user may ask for with --model-kind (hybrid and lexical are named by the model itself).
CHECKPOINT_KINDS = (DENSE, SPARSE, MULTI_VECTOR, CROSS_ENCODER, DUAL)


@dataclass(frozen=True)
class ModelSpec:
    alias: str
    kind: str  # one of KINDS; hybrid: model_id is the dense leg, doc_model_id the lexical one
    model_id: str = (
        ""  # HF id or local path; "package:<name>" for a model shipped as a Python package; dual: query tower
    )
    query_prompt: str = ""
    doc_prompt: str = ""
    query_prompt_name: str | None = None  # a prompt the checkpoint defines itself (config_sentence_transformers.json)
    needs_remote_code: bool = False
    append_eos: bool = False  # last-token pooling on an end-of-sequence token the tokenizer does not add itself
    revision: str | None = None
    description: str = ""
    # dual encoders (separate query and document towers, raw transformers models); sparse: a separate document
    # encoder (DiSCo's query encoder with a SPLADE document encoder)
    doc_model_id: str = ""
    pooling: str = "cls"
    similarity: str = "dot"
    max_length: int | None = None
    shared_tokenizer: bool = False  # the document tower uses the query tower's tokenizer (as the reference code does)
    origin: str = "built-in"  # plugins.BUILT_IN, or the plugin distribution that registered it ("name version")
    # mteb ModelMeta-style metadata; empty / None: not known
    family: str = ""  # e.g. "SPLADE", "ColBERT", "Qwen3-Embedding", "BRIDGE: ANCE"
    parameters: int | None = None
    embedding_dim: int | None = None  # sparse: the vocabulary size
    max_tokens: int | None = None  # the model's own context limit
    instruction_template: str = ""  # e.g. "Instruct: {task}\nQuery: " ({task}: the task description)
    license: str = ""
    release_date: str = ""  # YYYY-MM-DD
    training_data: tuple[str, ...] = ()
    reference: str = ""  # paper or model card URL

    def __post_init__(self) -> None:
        # Before kinds had names, BM25 (a spec without a checkpoint) was registered as "sparse"; plugins may
        # still say so. A checkpoint-less sparse spec can only be BM25.
        if self.kind == SPARSE and not self.model_id:
            object.__setattr__(self, "kind", LEXICAL)
