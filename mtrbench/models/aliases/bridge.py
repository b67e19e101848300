"""The single-vector encoders of the BRIDGE paper's table, in their reference (pyserini) formats.

Checkpoints are the ones the paper lists (its Table 16), plus pyserini's own ANCE and TCT-ColBERT encoders.
Sentence-transformers ports that predate ``similarity_fn_name`` would load as cosine models, so they run as
dual encoders of one checkpoint with its own modules and the dot product their model cards name
(``pooling="sentence-transformers"``); the formats are in ``encode.reference_formats``. SPLADE is the
learned-sparse alias ``splade-cocondenser-ensembledistil`` (models/aliases/learned_sparse.py).
"""

from __future__ import annotations

from typing import Any

from mtrbench.models.spec import DENSE, DUAL, ModelSpec

_PAPER = "DREAM/BRIDGE, ICLR 2026, Table 16"
_MSMARCO = ("MS MARCO passage",)


def _one_checkpoint(alias: str, model_id: str, pooling: str, **fields: Any) -> ModelSpec:
    """A dual encoder whose two towers are the same checkpoint, in a reference format."""
    return ModelSpec(alias, DUAL, model_id, doc_model_id=model_id, pooling=pooling, similarity="dot", **fields)


SPECS: tuple[ModelSpec, ...] = (
    _one_checkpoint(
        "tas-b",
        "sentence-transformers/msmarco-distilbert-base-tas-b",
        "sentence-transformers",
        family="BRIDGE: SBERT",
        description=f"SBERT ({_PAPER}): TAS-B DistilBERT, CLS pooling, dot product",
        parameters=66_000_000,
        embedding_dim=768,
        max_tokens=512,
        license="apache-2.0",
        training_data=_MSMARCO,
        reference="https://huggingface.co/sentence-transformers/msmarco-distilbert-base-tas-b",
    ),
    _one_checkpoint(
        "contriever",
        "facebook/contriever",
        "mean",
        family="BRIDGE: Contriever",
        description=f"Contriever ({_PAPER}): unsupervised BERT-base, mean pooling, dot product",
        parameters=110_000_000,
        embedding_dim=768,
        max_tokens=512,
        release_date="2021-12-16",
        training_data=("CCNet", "Wikipedia"),
        reference="https://huggingface.co/facebook/contriever",
    ),
    ModelSpec(
        "dpr-multiset",
        DUAL,
        "sentence-transformers/facebook-dpr-question_encoder-multiset-base",
        doc_model_id="sentence-transformers/facebook-dpr-ctx_encoder-multiset-base",
        pooling="cls",
        similarity="dot",
        family="BRIDGE: DPR",
        description=(
            f"DPR multiset ({_PAPER}, sentence-transformers ports of facebook/dpr-*-multiset-base): "
            "question and context towers, CLS, dot product"
        ),
        parameters=2 * 110_000_000,
        embedding_dim=768,
        max_tokens=512,
        training_data=("Natural Questions", "TriviaQA", "WebQuestions", "CuratedTREC"),
        reference="https://huggingface.co/sentence-transformers/facebook-dpr-ctx_encoder-multiset-base",
    ),
    _one_checkpoint(
        "bpr-gpl-trec-covid",
        "income/bpr-gpl-trec-covid-base-msmarco-distilbert-tas-b",
        "bpr",
        family="BRIDGE: BPR",
        description=(
            f"BPR ({_PAPER}): binary codes, 1000 Hamming candidates re-ranked with the float query vector "
            "(pyserini --binary-hits 1000 --rerank); pooling bpr:K in a ModelSpec changes the candidates"
        ),
        parameters=66_000_000,
        embedding_dim=768,
        max_tokens=512,
        training_data=(*_MSMARCO, "TREC-COVID (GPL)"),
        reference="https://huggingface.co/income/bpr-gpl-trec-covid-base-msmarco-distilbert-tas-b",
    ),
    _one_checkpoint(
        "ance-firstp",
        "sentence-transformers/msmarco-roberta-base-ance-firstp",
        "sentence-transformers",
        family="BRIDGE: ANCE",
        description=f"ANCE ({_PAPER}, sentence-transformers port): RoBERTa CLS -> Dense -> LayerNorm, dot product",
        parameters=125_000_000,
        embedding_dim=768,
        max_tokens=512,
        license="apache-2.0",
        training_data=_MSMARCO,
        reference="https://huggingface.co/sentence-transformers/msmarco-roberta-base-ance-firstp",
    ),
    _one_checkpoint(
        "ance-msmarco-passage",
        "castorini/ance-msmarco-passage",
        "ance",
        family="BRIDGE: ANCE",
        description=(
            "ANCE in pyserini's format: RoBERTa CLS -> embeddingHead -> norm, queries cut at 64 tokens, dot product"
        ),
        parameters=125_000_000,
        embedding_dim=768,
        max_tokens=512,
        training_data=_MSMARCO,
        reference="https://huggingface.co/castorini/ance-msmarco-passage",
    ),
    _one_checkpoint(
        "tct-colbert-v2-hnp",
        "castorini/tct_colbert-v2-hnp-msmarco",
        "tct-colbert",
        family="BRIDGE: TCT-ColBERT",
        description=(
            f"TCT-ColBERT v2 HNP ({_PAPER}, pyserini's format): '[CLS] [Q] ' query + [MASK] padding to 36 tokens, "
            "'[CLS] [D] ' documents, mean after the markers, dot product"
        ),
        parameters=110_000_000,
        embedding_dim=768,
        max_tokens=512,
        training_data=_MSMARCO,
        reference="https://huggingface.co/castorini/tct_colbert-v2-hnp-msmarco",
    ),
    _one_checkpoint(
        "aggretriever-cocondenser",
        "castorini/aggretriever-cocondenser",
        "aggretriever",
        family="BRIDGE: Aggretriever",
        description=(
            f"Aggretriever ({_PAPER}, pyserini's format): CLS -> 128 dims + MLM term weights folded to 640 dims, "
            "queries cut at 32 tokens, dot product"
        ),
        parameters=110_000_000,
        embedding_dim=768,
        max_tokens=512,
        training_data=_MSMARCO,
        reference="https://huggingface.co/castorini/aggretriever-cocondenser",
    ),
    ModelSpec(
        "arctic-embed-m",
        DENSE,
        "Snowflake/snowflake-arctic-embed-m",
        query_prompt="Represent this sentence for searching relevant passages: ",
        family="BRIDGE: Arctic",
        description=f"Snowflake Arctic-embed m ({_PAPER}): CLS, normalized, with its query prefix",
        parameters=109_000_000,
        embedding_dim=768,
        max_tokens=512,
        license="apache-2.0",
        release_date="2024-04-16",
        reference="https://huggingface.co/Snowflake/snowflake-arctic-embed-m",
    ),
)
