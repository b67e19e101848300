"""Single-vector encoders whose published format is more than "a transformer and a pooling": the formats of
pyserini's reference encoders, which the BRIDGE paper's table runs (docs/retrievers.md).

A format is named where a dual encoder names its pooling (``ModelSpec.pooling``, ``--pooling``), because it
is exactly that: how a checkpoint's token states become the vector that is searched.

* ``ance``: pyserini's ``AnceEncoder`` layout (castorini/ance-msmarco-passage): a RoBERTa whose CLS state
  goes through a linear layer (``embeddingHead``) and a LayerNorm (``norm``); queries cut at 64 tokens.
* ``tct-colbert``: TCT-ColBERT as a single vector. Queries are ``"[CLS] [Q] " + query`` followed by
  ``[MASK]`` tokens, cut at exactly 36 tokens; documents ``"[CLS] [D] " + text``; no special tokens are
  added by the tokenizer; the vector is the mean of the token states after the four marker tokens
  (``[CLS]``, ``[``, ``Q``/``D``, ``]``), padding excluded.
* ``aggretriever``: pyserini's Aggretriever layout (a masked LM + ``tok_proj`` + ``cls_proj``), in
  ``encode.aggretriever``; queries cut at 32 tokens.
* ``sentence-transformers``: the checkpoint's own sentence-transformers modules on both sides (e.g. the
  ANCE port's CLS -> Dense -> LayerNorm), compared by the dual encoder's similarity (dot product), which
  old sentence-transformers configurations do not record.
* ``bpr`` / ``bpr:K``: BPR: the checkpoint's own modules, then a two-stage search. Vectors become binary
  codes (+1 where a component is >= 0, else -1); the K documents nearest in Hamming distance to the
  query's code (K = 1000, pyserini's ``--binary-hits``) are re-ranked by the float query vector's dot
  product with their codes (``search.binary``).
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass, replace
from typing import Any

import torch

from mtrbench.encode.pooling import pool_packed, pool_padded
from mtrbench.encode.towers import (
    DTYPES,
    SENTENCE_TRANSFORMERS,
    TRANSFORMERS,
    TowerSpec,
    TransformersTower,
)
from mtrbench.infra.errors import ModelError

# Tower kinds (TowerSpec.kind) this module loads; encode.towers.load_tower hands them here (TOWER_LOADERS).
ANCE_TOWER = "ance"
TCT_QUERY_TOWER = "tct-colbert-query"
TCT_DOCUMENT_TOWER = "tct-colbert-document"
TOWER_KINDS = (ANCE_TOWER, TCT_QUERY_TOWER, TCT_DOCUMENT_TOWER)

TCT_QUERY_LENGTH = 36  # pyserini's TctColBertQueryEncoder: the query with its [MASK] padding, exactly
TCT_MARKER_TOKENS = 4  # "[CLS]", "[", "q"/"d", "]": left out of the mean
ANCE_QUERY_LENGTH = 64
BPR_BINARY_HITS = 1000


@dataclass(frozen=True)
class EncoderFormat:
    name: str  # as settings record it ("bpr:1000")
    query_tower: str  # TowerSpec kind
    doc_tower: str
    query_max_length: int | None = None  # None: the shared --max-length / the model's own
    binary_candidates: int | None = None  # BPR: Hamming candidates re-ranked with the float query vector


FORMAT_NAMES = ("ance", "tct-colbert", "aggretriever", "sentence-transformers", "bpr")
AGGRETRIEVER_TOWER = "aggretriever"  # encode.aggretriever loads it
AGGRETRIEVER_QUERY_LENGTH = 32


def encoder_format(name: str) -> EncoderFormat | None:
    """The reference format a pooling name stands for; None for a plain pooling (cls, mean, last)."""
    base, colon, parameter = name.partition(":")
    if base not in FORMAT_NAMES:
        return None
    if parameter and base != "bpr" or colon and not parameter:
        raise ModelError(f"--pooling {name}: only bpr takes a parameter (bpr:K, K Hamming candidates)")
    if base == "ance":
        return EncoderFormat("ance", ANCE_TOWER, ANCE_TOWER, query_max_length=ANCE_QUERY_LENGTH)
    if base == "tct-colbert":
        return EncoderFormat("tct-colbert", TCT_QUERY_TOWER, TCT_DOCUMENT_TOWER, query_max_length=TCT_QUERY_LENGTH)
    if base == "aggretriever":
        return EncoderFormat(base, AGGRETRIEVER_TOWER, AGGRETRIEVER_TOWER, query_max_length=AGGRETRIEVER_QUERY_LENGTH)
    if base == "sentence-transformers":
        return EncoderFormat(base, SENTENCE_TRANSFORMERS, SENTENCE_TRANSFORMERS)
    if parameter and not (parameter.isascii() and parameter.isdigit() and int(parameter) > 0):
        raise ModelError(f"--pooling {name}: K in bpr:K is a positive number of Hamming candidates")
    candidates = int(parameter) if parameter else BPR_BINARY_HITS
    return EncoderFormat(f"bpr:{candidates}", SENTENCE_TRANSFORMERS, SENTENCE_TRANSFORMERS, None, candidates)


def load_reference_tower(spec: TowerSpec, device: str) -> TransformersTower:
    from transformers import AutoModel, AutoTokenizer

    common = {
        "revision": spec.revision,
        "local_files_only": spec.local_files_only,
        "trust_remote_code": spec.trust_remote_code,
    }
    tokenizer = AutoTokenizer.from_pretrained(spec.tokenizer_location or spec.location, **common)
    # the checkpoints carry heads (ANCE's embeddingHead/norm, TCT-ColBERT's MLM head) that the backbone
    # leaves out; ANCE's are read below, the MLM head is unused by the reference encoders too
    model = AutoModel.from_pretrained(spec.location, dtype=DTYPES[spec.dtype], **common)
    model = model.to(device).eval()
    if spec.kind == ANCE_TOWER:
        head = _ance_head(spec, model.config.hidden_size).to(device=device, dtype=DTYPES[spec.dtype]).eval()
        return AnceTower(model, tokenizer, spec, head)
    return TctColbertTower(model, tokenizer, spec, query=spec.kind == TCT_QUERY_TOWER)


def checkpoint_tensors(spec: TowerSpec) -> dict[str, torch.Tensor]:
    """Every tensor of the checkpoint's weights file (safetensors, else pytorch_model.bin)."""
    from transformers.utils import cached_file

    for name in ("model.safetensors", "pytorch_model.bin"):
        path = cached_file(
            spec.location,
            name,
            revision=spec.revision,
            local_files_only=spec.local_files_only,
            _raise_exceptions_for_missing_entries=False,
        )
        if path is None:
            continue
        if name.endswith(".safetensors"):
            from safetensors.torch import load_file

            return load_file(path)
        return torch.load(path, map_location="cpu", weights_only=True)
    raise ModelError(f"{spec.location}: no model.safetensors or pytorch_model.bin to read ANCE's head from")


def _ance_head(spec: TowerSpec, hidden: int) -> torch.nn.Sequential:
    """``embeddingHead`` (Linear) then ``norm`` (LayerNorm), as pyserini's AnceEncoder names them (with or
    without its ``ance_encoder.`` prefix)."""
    tensors = checkpoint_tensors(spec)

    def find(name: str) -> torch.Tensor:
        for key in (name, f"ance_encoder.{name}"):
            if key in tensors:
                return tensors[key]
        raise ModelError(
            f"{spec.location} is not in ANCE's format: its weights have no {name} (pyserini's AnceEncoder layout: "
            "roberta.*, embeddingHead.weight/bias, norm.weight/bias)"
        )

    weight = find("embeddingHead.weight")
    if weight.shape[1] != hidden:
        raise ModelError(f"{spec.location}: embeddingHead takes {weight.shape[1]} inputs, the encoder gives {hidden}")
    linear = torch.nn.Linear(hidden, weight.shape[0])
    norm = torch.nn.LayerNorm(weight.shape[0])  # torch's default eps, as the reference builds it
    with torch.no_grad():
        linear.weight.copy_(weight)
        linear.bias.copy_(find("embeddingHead.bias"))
        norm.weight.copy_(find("norm.weight"))
        norm.bias.copy_(find("norm.bias"))
    return torch.nn.Sequential(linear, norm)


class AnceTower(TransformersTower):
    """CLS state -> embeddingHead -> norm."""

    def __init__(self, model: Any, tokenizer: Any, spec: TowerSpec, head: torch.nn.Sequential) -> None:
        super().__init__(model, tokenizer, replace_pooling(spec, "cls"))
        self.head = head

    @property
    def embedding_dim(self) -> int:
        return int(self.head[0].out_features)

    def forward(self, tensors: dict[str, Any], packed: bool) -> torch.Tensor:
        if packed:
            return self.pool_states(self.packed_states(tensors), tensors["cu_seq_lens_q"])
        out = self.model(input_ids=tensors["input_ids"], attention_mask=tensors["attention_mask"], return_dict=True)
        return self.head(pool_padded(out.last_hidden_state, tensors["attention_mask"], "cls"))

    def pool_states(self, states: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
        return self.head(pool_packed(states, cu_seqlens, "cls"))

    def signature(self) -> dict[str, Any]:
        return {"format": "ance", "pooling": "cls", "head": ["embeddingHead", "norm"]}


class TctColbertTower(TransformersTower):
    """Marker text, no special tokens, (queries) [MASK] padding to 36 tokens, mean after the markers."""

    def __init__(self, model: Any, tokenizer: Any, spec: TowerSpec, query: bool) -> None:
        super().__init__(model, tokenizer, replace_pooling(spec, "mean"))
        self.query = query
        self.marker = "[CLS] [Q] " if query else "[CLS] [D] "
        self.mask_token = tokenizer.mask_token or "[MASK]"

    def tokenize(
        self, texts: list[str], executor: Executor | None = None, workers: int = 1, split_from: int | None = None
    ) -> list[list[int]]:
        if self.query:
            texts = [self.marker + t + self.mask_token * self.max_length for t in texts]
        else:
            texts = [self.marker + t for t in texts]
        encoded = self.tokenizer(
            texts, add_special_tokens=False, truncation=True, max_length=self.max_length, padding=False
        )
        return [list(ids) for ids in encoded["input_ids"]]

    def forward(self, tensors: dict[str, Any], packed: bool) -> torch.Tensor:
        if packed:
            return self.pool_states(self.packed_states(tensors), tensors["cu_seq_lens_q"])
        inputs = {k: v for k, v in tensors.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        states = self.model(**inputs, return_dict=True).last_hidden_state
        # pool_padded's mean takes right padding; the markers are cut off the front of every row
        return pool_padded(states[:, TCT_MARKER_TOKENS:], tensors["attention_mask"][:, TCT_MARKER_TOKENS:], "mean")

    def pool_states(self, states: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
        hidden = states[0] if states.dim() == 3 else states
        starts, ends = cu_seqlens[:-1].long(), cu_seqlens[1:].long()
        lengths = ends - starts
        segment = torch.repeat_interleave(
            torch.arange(len(lengths), device=hidden.device), lengths, output_size=hidden.shape[0]
        )
        position = torch.arange(hidden.shape[0], device=hidden.device) - starts[segment]
        accumulate = torch.float32 if hidden.dtype in (torch.float16, torch.bfloat16) else hidden.dtype
        weights = (position >= TCT_MARKER_TOKENS).to(accumulate).unsqueeze(1)
        total = torch.zeros(len(lengths), hidden.shape[1], device=hidden.device, dtype=accumulate)
        total.index_add_(0, segment, hidden.to(accumulate) * weights)
        counts = (lengths - TCT_MARKER_TOKENS).clamp(min=0).to(accumulate).clamp(min=1e-9).unsqueeze(1)
        return (total / counts).to(hidden.dtype)

    def signature(self) -> dict[str, Any]:
        side = "query" if self.query else "document"
        return {"format": "tct-colbert", "side": side, "marker": self.marker, "pooling": "mean after markers"}


def replace_pooling(spec: TowerSpec, pooling: str) -> TowerSpec:
    return replace(spec, pooling=pooling)


def tower_kinds(fmt: EncoderFormat | None) -> tuple[str, str]:
    """(query tower kind, document tower kind): plain transformers towers without a format."""
    return (fmt.query_tower, fmt.doc_tower) if fmt else (TRANSFORMERS, TRANSFORMERS)
