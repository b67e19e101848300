"""Aggretriever (Lin et al., TACL 2022; castorini/aggretriever-cocondenser) in pyserini's format: one 768-dim
vector per text, the concatenation of

* a semantic part: the CLS state through ``cls_proj`` (Linear, hidden -> 128);
* a lexical part: the masked-LM head's softmax over the vocabulary at every token after CLS, weighted by that
  token's ``tok_proj`` term weight (Linear, hidden -> 1), max-pooled over the tokens, then folded into 640
  dimensions: the vocabulary (trimmed at its start, or zero-padded at its end, to a multiple of 1280) is cut
  into slices of 1280 and max-pooled across slices; of each (even, odd) pair of the 1280 the even value is kept
  when it is the larger, else the odd one negated.

Queries are cut at 32 tokens (pyserini's AggretrieverQueryEncoder), documents at the model's limit (512).
The token max runs over the text's own tokens: pyserini encodes a query alone (no padding), and its document
batches multiply padded positions by 0 before the max, which lets the padding of a batch change a document's
vector; here a text's vector never depends on its batch.
"""

from __future__ import annotations

from typing import Any

import torch

from mtrbench.encode.reference_formats import checkpoint_tensors, replace_pooling
from mtrbench.encode.towers import DTYPES, TowerSpec, TransformersTower
from mtrbench.infra.errors import ModelError

AGGRETRIEVER_TOWER = "aggretriever"
LEXICAL_DIMS = 640
SEMANTIC_DIMS = 128
# MLM logits are (rows, tokens, vocabulary) floats: rows per forward chunk so that a chunk stays near this size
LOGIT_BYTES = 256 * 1024 * 1024


def load_aggretriever_tower(spec: TowerSpec, device: str) -> AggretrieverTower:
    from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer

    common = {
        "revision": spec.revision,
        "local_files_only": spec.local_files_only,
        "trust_remote_code": spec.trust_remote_code,
    }
    tokenizer = AutoTokenizer.from_pretrained(spec.tokenizer_location or spec.location, **common)
    config = AutoConfig.from_pretrained(spec.location, **common)
    model = AutoModelForMaskedLM.from_config(config)
    tensors = checkpoint_tensors(spec)
    _load_encoder(model, tensors, spec.location)
    tok_proj = _linear(tensors, "tok_proj", config.hidden_size, spec.location)
    cls_proj = _linear(tensors, "cls_proj", config.hidden_size, spec.location)
    dtype = DTYPES[spec.dtype]
    heads = torch.nn.ModuleDict({"tok_proj": tok_proj, "cls_proj": cls_proj}).to(device=device, dtype=dtype).eval()
    return AggretrieverTower(model.to(device=device, dtype=dtype).eval(), tokenizer, spec, heads)


def _load_encoder(model: torch.nn.Module, tensors: dict[str, torch.Tensor], location: str) -> None:
    """The masked LM's weights: pyserini's ``encoder.*`` (its base_model_prefix), or unprefixed."""
    state = {k.removeprefix("encoder."): v for k, v in tensors.items() if not k.startswith(("tok_proj.", "cls_proj."))}
    missing, _ = model.load_state_dict(state, strict=False)
    tied = {name for name in missing if "decoder" in name or name.endswith("position_ids")}
    if set(missing) - tied:
        raise ModelError(
            f"{location} is not in Aggretriever's format: its weights lack {sorted(set(missing) - tied)[:3]} "
            "(pyserini's layout: encoder.<masked LM>, tok_proj, cls_proj)"
        )
    if any("decoder.weight" in name for name in missing):
        model.tie_weights()


def _linear(tensors: dict[str, torch.Tensor], name: str, hidden: int, location: str) -> torch.nn.Linear:
    weight, bias = tensors.get(f"{name}.weight"), tensors.get(f"{name}.bias")
    if weight is None or bias is None or weight.shape[1] != hidden:
        raise ModelError(f"{location} is not in Aggretriever's format: no {name} Linear taking {hidden} inputs")
    layer = torch.nn.Linear(hidden, weight.shape[0])
    with torch.no_grad():
        layer.weight.copy_(weight)
        layer.bias.copy_(bias)
    return layer


def fold(lexical: torch.Tensor, dims: int = LEXICAL_DIMS) -> torch.Tensor:
    """(n, vocabulary) -> (n, dims): pyserini's ``aggregate(full=True)``."""
    width = 2 * dims
    trim = lexical.shape[1] % width
    if trim > 1000:  # the reference's rule: BERT's first 1000 ids are unused, more than that is padded instead
        trim -= width
    if trim >= 0:
        lexical = lexical[:, trim:]
    else:
        lexical = torch.nn.functional.pad(lexical, (0, -trim))
    pooled = lexical.reshape(lexical.shape[0], -1, width).max(dim=1).values
    positive, negative = pooled[:, 0::2], pooled[:, 1::2]
    return torch.where(positive > negative, positive, -negative)


class AggretrieverTower(TransformersTower):
    def __init__(self, model: Any, tokenizer: Any, spec: TowerSpec, heads: torch.nn.ModuleDict) -> None:
        super().__init__(model, tokenizer, replace_pooling(spec, "cls"))
        self.heads = heads
        self.packable = False  # the MLM head runs on padded batches, chunked by rows

    @property
    def embedding_dim(self) -> int:
        return SEMANTIC_DIMS + LEXICAL_DIMS

    def transformer(self) -> torch.nn.Module:
        return self.model.base_model

    def forward(self, tensors: dict[str, Any], packed: bool) -> torch.Tensor:
        mask = tensors["attention_mask"]
        vocabulary = int(self.model.config.vocab_size)
        rows = max(1, LOGIT_BYTES // (4 * vocabulary * max(1, mask.shape[1])))
        parts = []
        for start in range(0, mask.shape[0], rows):
            part = {k: v[start : start + rows] for k, v in tensors.items() if k in ("input_ids", "attention_mask")}
            parts.append(self._vectors(part))
        return torch.cat(parts)

    def _vectors(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        out = self.model(**inputs, output_hidden_states=True, return_dict=True)
        hidden = out.hidden_states[-1]
        weights = self.heads["tok_proj"](hidden[:, 1:])  # (n, L-1, 1)
        weighted = torch.softmax(out.logits[:, 1:].float(), dim=-1) * weights.float()
        real = inputs["attention_mask"][:, 1:].bool().unsqueeze(-1)
        lexical = weighted.masked_fill(~real, float("-inf")).max(dim=1).values
        lexical = torch.where(torch.isinf(lexical), torch.zeros_like(lexical), lexical)  # a text of CLS alone
        semantic = self.heads["cls_proj"](hidden[:, 0])
        return torch.cat([semantic.float(), fold(lexical)], dim=-1).to(hidden.dtype)

    def signature(self) -> dict[str, Any]:
        return {"format": "aggretriever", "semantic": SEMANTIC_DIMS, "lexical": LEXICAL_DIMS}
