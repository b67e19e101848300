"""Late-interaction retrievers (MultiVectorEncoder checkpoints: ColBERT).

sentence-transformers 6 loads both as ``MultiVectorEncoder``: colbertv2.0 in Stanford ColBERT's format
(``artifact.metadata``), answerai-colbert-small-v1 in PyLate's. Metadata from the model cards
(huggingface.co/<id>) and, for colbertv2.0, mteb's model registry (mteb/models/model_implementations/pylate_models.py);
what neither states is left empty. ``embedding_dim`` is the size of each token vector.
"""

from __future__ import annotations

from mtrbench.models.spec import MULTI_VECTOR, ModelSpec

SPECS: tuple[ModelSpec, ...] = (
    ModelSpec(
        "colbertv2",
        MULTI_VECTOR,
        "colbert-ir/colbertv2.0",
        revision="c1e84128e85ef755c096a95bdb06b47793b13acf",  # the revision mteb's registry scores
        description="ColBERTv2 (Stanford ColBERT checkpoint): 128-dim token vectors, MaxSim",
        family="ColBERT",
        parameters=109_482_240,
        embedding_dim=128,
        max_tokens=180,  # the documents' token limit it was trained with (mteb's max_tokens)
        license="mit",
        training_data=("MS MARCO",),
        reference="https://arxiv.org/abs/2112.01488",
    ),
    ModelSpec(
        "answerai-colbert-small",
        MULTI_VECTOR,
        "answerdotai/answerai-colbert-small-v1",
        description="answerai-colbert-small-v1 (JaColBERTv2.5 recipe, MiniLM-sized): 96-dim token vectors, MaxSim",
        family="ColBERT",
        parameters=33_000_000,  # the card's "33 million parameters"
        embedding_dim=96,
        max_tokens=512,
        license="apache-2.0",
        release_date="2024-08-13",  # the announcement (answer.ai/posts/2024-08-13-small-but-mighty-colbert)
        reference="https://huggingface.co/answerdotai/answerai-colbert-small-v1",
    ),
)
