"""Token vectors of a late-interaction (ColBERT-shaped) checkpoint, encoded by sentence-transformers'
``MultiVectorEncoder`` itself: ``encode_query`` / ``encode_document`` apply the checkpoint's own markers
(its "query" / "document" prompts, e.g. "[Q] " / "[D] "), query expansion with [MASK] up to its length,
document length and skiplist masking, exactly as the checkpoint defines them. Nothing of that is redone here;
this module only loads the model, batches the texts with a progress bar, and reads back what the checkpoint
set so that results record it.

mtrbench's packed engine (encode/engine.py) returns one pooled vector per text and has no token-output path
yet, so this family encodes through sentence-transformers (logged once per process)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from mtrbench.infra.errors import ModelError, first_line
from mtrbench.infra.reporting import progress_bar

if TYPE_CHECKING:
    from sentence_transformers import MultiVectorEncoder

log = logging.getLogger(__name__)

QUERY, DOCUMENT = "query", "document"
_fallback_logged = False


def log_fallback_once() -> None:
    global _fallback_logged
    if not _fallback_logged:
        _fallback_logged = True
        log.warning(
            "note: multi-vector models encode through sentence-transformers' MultiVectorEncoder: mtrbench's "
            "packed engine has no token-output path yet"
        )


def load_multivector(location: str, device: str, local_only: bool, trust_remote_code: bool) -> MultiVectorEncoder:
    """The checkpoint as sentence-transformers loads it; one error line when it cannot."""
    from sentence_transformers import MultiVectorEncoder

    try:
        return MultiVectorEncoder(
            location, device=device, local_files_only=local_only, trust_remote_code=trust_remote_code
        )
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load {location} as a multi-vector model ({first_line(exc)})") from None


def _transformer(model: MultiVectorEncoder) -> Any:
    return model[0]


def embedding_dim(model: MultiVectorEncoder) -> int:
    return int(model.get_embedding_dimension() or 0)


@dataclass(frozen=True)
class CheckpointSettings:
    """What the checkpoint itself sets for the query and the document side (read, never overridden)."""

    query_prompt: str
    doc_prompt: str
    query_length: int | None
    document_length: int | None
    query_expansion: dict[str, Any] | None
    max_seq_length: int | None
    skiplist_words: tuple[str, ...]
    similarity: str  # maxsim | meanmaxsim
    modules: tuple[str, ...]

    @property
    def query_tokens(self) -> int | None:
        """The longest query the model reads (special tokens and marker included): a fixed expansion pads
        to its length and reads no more; otherwise query_length, else the model's max length."""
        if self.query_expansion and self.query_expansion.get("strategy") == "fixed":
            return int(self.query_expansion["length"])
        return self.query_length or self.max_seq_length

    def as_dict(self) -> dict[str, Any]:
        return {
            "query_marker": self.query_prompt,
            "document_marker": self.doc_prompt,
            "query_length": self.query_length,
            "document_length": self.document_length,
            "query_expansion": self.query_expansion,
            "max_seq_length": self.max_seq_length,
            "skiplist_words": list(self.skiplist_words),
            "similarity": self.similarity,
            "modules": list(self.modules),
        }


def checkpoint_settings(model: MultiVectorEncoder) -> CheckpointSettings:
    from sentence_transformers.multi_vector_encoder.modules import MultiVectorMask

    transformer = _transformer(model)
    prompts = model.prompts or {}
    doc_prompt = next((prompts[name] for name in (DOCUMENT, "passage", "corpus") if name in prompts), "")
    masks = [module for module in model if isinstance(module, MultiVectorMask)]
    expansion = getattr(transformer, "query_expansion", None)
    return CheckpointSettings(
        query_prompt=prompts.get(QUERY, ""),
        doc_prompt=doc_prompt,
        query_length=getattr(transformer, "query_length", None),
        document_length=getattr(transformer, "document_length", None),
        query_expansion=dict(expansion) if expansion else None,
        max_seq_length=model.max_seq_length,
        skiplist_words=tuple(masks[0].skiplist_words) if masks else (),
        similarity=str(model.similarity_fn_name),
        modules=tuple(type(module).__name__ for module in model),
    )


def encode_tokens(
    model: MultiVectorEncoder,
    texts: list[str],
    side: str,
    batch_size: int = 32,
    show_progress: bool = True,
    desc: str = "Encoding",
    prompt: str | None = None,
) -> list[torch.Tensor]:
    """One (tokens, dim) fp32 CPU tensor per text, through ``encode_query`` or ``encode_document``;
    ``prompt``: a marker replacing the checkpoint's own (None: the checkpoint's)."""
    log_fallback_once()
    encode = model.encode_query if side == QUERY else model.encode_document
    out: list[torch.Tensor] = []
    # blocks of a few batches: the progress bar moves while sentence-transformers length-sorts inside a block
    block = batch_size * 8
    with progress_bar(total=len(texts), show_progress=show_progress, desc=desc, unit="text") as bar:
        for start in range(0, len(texts), block):
            part = texts[start : start + block]
            vectors = encode(part, prompt=prompt, batch_size=batch_size, show_progress_bar=False)
            out.extend(vector.detach().to("cpu", torch.float32) for vector in vectors)
            bar.update(len(part))
    return out
