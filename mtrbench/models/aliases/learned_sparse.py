"""Learned sparse retrievers (SparseEncoder checkpoints: SPLADE, DiSCo).

Metadata from the model cards (huggingface.co/<id>) and, for splade-v3, mteb's model registry
(mteb/models/model_implementations/splade_models.py); what neither states is left empty.
"""

from __future__ import annotations

from mtrbench.models.spec import SPARSE, ModelSpec

BERT_VOCABULARY = 30522  # the output dimension of a BERT-base SPLADE: one weight per WordPiece
SPLADE_CARD_LICENSE = "cc-by-nc-sa-4.0"

# DiSCo's query format (its model cards): the conversation flattened newest first, "q_n [SEP] a_{n-1} [SEP] q_{n-1}
# ... [SEP] q_0". mtrbench's closest settings, given as a note rather than applied (they are query-format flags).
_DISCO_FORMAT = "--order current-first --user-prefix '' --assistant-prefix '' --separator ' [SEP] '"

SPECS: tuple[ModelSpec, ...] = (
    ModelSpec(
        "splade-v3",
        SPARSE,
        "naver/splade-v3",
        revision="fdfeceb91d7b9de7985b38addd3ba9f53a59a355",  # the revision mteb's registry scores
        description="SPLADE-v3 (from SPLADE++ SelfDistil, KL-Div + MarginMSE on MS MARCO without titles)",
        family="SPLADE",
        parameters=109_514_298,
        embedding_dim=BERT_VOCABULARY,
        max_tokens=512,
        license=SPLADE_CARD_LICENSE,
        release_date="2024-03-08",
        training_data=("MS MARCO",),
        reference="https://arxiv.org/abs/2403.06789",
    ),
    ModelSpec(
        "splade-cocondenser-ensembledistil",
        SPARSE,
        "naver/splade-cocondenser-ensembledistil",
        description="SPLADE++ CoCondenser EnsembleDistil (MS MARCO dev MRR@10 38.3); one of BRIDGE's systems",
        family="SPLADE",
        embedding_dim=BERT_VOCABULARY,
        license=SPLADE_CARD_LICENSE,
        training_data=("MS MARCO",),
        reference="https://arxiv.org/abs/2205.04733",
    ),
    ModelSpec(
        "disco-topiocqa-mistral",
        SPARSE,
        "slupart/splade-disco-topiocqa-mistral",
        # DiSCo fine-tunes only the query encoder; its cards and code pair it with the unchanged SPLADE++ document
        # encoder (github.com/SimonLupart/disco-conv-splade indexes TopiOCQA with naver/splade-cocondenser-ensembledistil)
        doc_model_id="naver/splade-cocondenser-ensembledistil",
        description="DiSCo conversational SPLADE query encoder (distilled from Mistral rewrites on TopiOCQA) with "
        f"the SPLADE++ EnsembleDistil document encoder; card's query format: {_DISCO_FORMAT}",
        family="SPLADE: DiSCo",
        embedding_dim=BERT_VOCABULARY,
        training_data=("TopiOCQA",),
        reference="https://arxiv.org/abs/2410.14609",
    ),
)
