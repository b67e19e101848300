"""One encoder model ("tower") as the engine drives it: tokenize, collate, forward.

Two kinds:

* ``sentence-transformers``: the model's own modules run on our batches (Transformer, then its
  Pooling / Dense / Normalize), so pooling and normalization follow the checkpoint's configuration
  exactly. Tokenization uses a private copy of the fast tokenizer's Rust backend (no padding, the
  model's truncation); before trusting it for a prompt, the tower checks on probe texts that it
  yields exactly the ids sentence-transformers' own ``preprocess`` would, and otherwise falls back
  to calling ``preprocess`` per batch.
* ``transformers``: a raw ``AutoModel`` + our pooling (dual encoders such as Dragon: CLS, dot product).

A ``TowerSpec`` is picklable, so worker processes (one per GPU) can load the same tower.
"""

from __future__ import annotations

import copy
import importlib
import json
import logging
from abc import ABC, abstractmethod
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mtrbench.data.hub import hub_error
from mtrbench.encode import varlen
from mtrbench.encode.batching import Ragged, packed_arrays, padded_arrays, static_arrays
from mtrbench.encode.pooling import check_pooling, pool_packed, pool_padded
from mtrbench.infra.errors import MtrbenchError, first_line

log = logging.getLogger(__name__)

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
SENTENCE_TRANSFORMERS = "sentence-transformers"
TRANSFORMERS = "transformers"
# Tower kinds whose classes subclass the ones here, loaded by name ("module:function", as cli.app loads
# handlers) so that this module imports none of them: pyserini's reference formats (ANCE's head,
# TCT-ColBERT's query and document markers) in encode.reference_formats, Aggretriever in encode.aggretriever.
TOWER_LOADERS = {
    **{
        kind: "mtrbench.encode.reference_formats:load_reference_tower"
        for kind in ("ance", "tct-colbert-query", "tct-colbert-document")
    },
    "aggretriever": "mtrbench.encode.aggretriever:load_aggretriever_tower",
}
# Modules after the transformer that work on packed (flattened) token states or on sentence vectors.
_PACKABLE_ST_MODULES = {"Pooling", "Normalize", "Dense"}
_PROBE_TEXTS = (
    "",
    "Short text.",
    "Ünïcode — ‘quotes’,  double  spaces\tand a tab; numbers 3.14 and URLs a.b/c?d=1",
    "word " * 600,
)


@dataclass(frozen=True)
class TowerSpec:
    kind: str  # SENTENCE_TRANSFORMERS | TRANSFORMERS
    location: str  # local folder or Hub id
    revision: str | None = None
    local_files_only: bool = False
    trust_remote_code: bool = False
    max_length: int | None = None  # None: the model's own
    pooling: str = "cls"  # transformers towers only
    dtype: str = "fp32"
    tokenizer_location: str | None = None  # transformers towers: tokenizer from another folder / Hub id
    # last-token pooling models trained on a trailing end-of-sequence token their tokenizer.json does not add
    # (e5-mistral, gte-Qwen2 under transformers 5): the tower's tokenizer appends it
    append_eos: bool = False


def load_tower(spec: TowerSpec, device: str) -> Tower:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    refuse_remote_code(spec)
    try:
        if spec.kind == SENTENCE_TRANSFORMERS:
            return _load_sentence_transformer(spec, device)
        if spec.kind == TRANSFORMERS:
            return _load_transformers(spec, device)
        if spec.kind in TOWER_LOADERS:
            module, function = TOWER_LOADERS[spec.kind].split(":")
            return getattr(importlib.import_module(module), function)(spec, device)
    except (OSError, ValueError) as exc:
        if "trust_remote_code" in str(exc) and not spec.trust_remote_code:
            raise MtrbenchError(
                f"model {spec.location} runs code from its repository; pass --trust-remote-code if you trust it"
            ) from None
        if Path(spec.location).expanduser().exists():
            raise MtrbenchError(f"could not load model from {spec.location}: {first_line(exc)}") from None

        local_option = (
            "`--query-model DIR --doc-model DIR2` (one folder per tower)"
            if spec.kind == TRANSFORMERS
            else "`--model DIR`"
        )
        raise hub_error(spec.location, spec.revision, kind="model", what="model", local_option=local_option) from None
    raise ValueError(f"unknown tower kind {spec.kind!r}")


def refuse_remote_code(spec: TowerSpec) -> None:
    """A local folder whose config.json maps classes to its own code (``auto_map``: NV-Embed, gte-Qwen2) loads
    only with ``--trust-remote-code``: transformers would otherwise run or silently skip that code."""
    config = Path(spec.location).expanduser() / "config.json"
    if spec.trust_remote_code or not config.is_file():
        return
    try:
        remote = "auto_map" in json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # unreadable: transformers' own loading reports it
    if remote:
        raise MtrbenchError(
            f"model {spec.location} runs code from its folder (config.json has auto_map); "
            "pass --trust-remote-code if you trust it"
        )


def position_limit(model: torch.nn.Module) -> int | None:
    """The longest sequence a transformers model's positions allow (None: not stated)."""
    limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    return int(limit) - varlen.position_offset(model) if isinstance(limit, int) else None


def append_eos_token(tokenizer: Any, location: str) -> None:
    """Make every tokenized text end with the tokenizer's end-of-sequence token, as the model was trained: its
    post-processor gains a step after the existing one (so ``<s>`` stays and truncation leaves room for both)."""
    from tokenizers import processors

    eos, eos_id = tokenizer.eos_token, tokenizer.eos_token_id
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if eos is None or eos_id is None or backend is None:
        raise MtrbenchError(f"model {location}: its tokenizer has no end-of-sequence token to append")
    if tokenizer("a", add_special_tokens=True)["input_ids"][-1] == eos_id:
        return  # already appended (e.g. a tokenizer.json that adds it)
    append = processors.TemplateProcessing(
        single=f"$A:0 {eos}:0", pair=f"$A:0 $B:1 {eos}:1", special_tokens=[(eos, eos_id)]
    )
    current = backend.post_processor
    backend.post_processor = append if current is None else processors.Sequence([current, append])


def _load_sentence_transformer(spec: TowerSpec, device: str) -> SentenceTransformerTower:
    from sentence_transformers import SentenceTransformer

    model_kwargs = {} if spec.trust_remote_code else {"attn_implementation": "sdpa"}
    model = SentenceTransformer(
        spec.location,
        device=device,
        revision=spec.revision,
        local_files_only=spec.local_files_only,
        trust_remote_code=spec.trust_remote_code,
        model_kwargs=model_kwargs,
    )
    if spec.dtype != "fp32":
        model.to(DTYPES[spec.dtype])
    if spec.append_eos:
        append_eos_token(model.tokenizer, spec.location)
    if spec.max_length:
        first = model[0]
        limit = position_limit(first.auto_model) if hasattr(first, "auto_model") else None
        if limit is not None and spec.max_length > limit:
            raise MtrbenchError(f"--max-length {spec.max_length} exceeds the {limit} positions of {spec.location}")
        model.max_seq_length = spec.max_length
    return SentenceTransformerTower(model, spec)


def _load_transformers(spec: TowerSpec, device: str) -> TransformersTower:
    from transformers import AutoModel, AutoTokenizer

    common = {
        "revision": spec.revision,
        "local_files_only": spec.local_files_only,
        "trust_remote_code": spec.trust_remote_code,
    }
    tokenizer = AutoTokenizer.from_pretrained(spec.tokenizer_location or spec.location, **common)
    model = AutoModel.from_pretrained(
        spec.location,
        dtype=DTYPES[spec.dtype],
        **({} if spec.trust_remote_code else {"attn_implementation": "sdpa"}),
        **common,
    )
    return TransformersTower(model.to(device).eval(), tokenizer, spec)


class Tower(ABC):
    """Shared tokenization and collation; subclasses provide the forward pass."""

    tokenizer: Any
    max_length: int
    spec: TowerSpec
    packable: bool = False  # may run packed (unpadded) batches
    position_offset: int = 0

    def __init__(self, tokenizer, max_length: int, spec: TowerSpec) -> None:
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        self.spec = spec
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.padding_side = getattr(tokenizer, "padding_side", "right")
        self.with_token_type_ids = "token_type_ids" in getattr(tokenizer, "model_input_names", [])
        self._backend = None
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is not None:
            # A private copy: the shared tokenizer's truncation/padding state changes with every call made on it.
            self._backend = copy.deepcopy(backend)
            self._backend.no_padding()
            self._backend.enable_truncation(
                self.max_length, strategy="longest_first", direction=getattr(tokenizer, "truncation_side", "right")
            )

    # -- tokenization -----------------------------------------------------------------------------

    def tokenize(
        self, texts: list[str], executor: Executor | None = None, workers: int = 1, split_from: int | None = None
    ) -> list[list[int]]:
        """Token ids with special tokens, truncated to ``max_length``, no padding; ``texts`` are split over
        ``workers`` threads of ``executor`` from ``split_from`` texts on (default 2,048)."""
        if self._backend is None:
            encoded = self.tokenizer(
                texts,
                add_special_tokens=True,
                truncation=True,
                max_length=self.max_length,
                padding=False,
                return_attention_mask=False,
                return_token_type_ids=False,
            )
            return [list(x) for x in encoded["input_ids"]]
        if executor is None or workers <= 1 or len(texts) < (split_from or 2048):
            return self._encode_backend(texts)
        step = -(-len(texts) // workers)
        parts = executor.map(self._encode_backend, [texts[i : i + step] for i in range(0, len(texts), step)])
        return [ids for part in parts for ids in part]

    def _encode_backend(self, texts: list[str]) -> list[list[int]]:
        encode = getattr(self._backend, "encode_batch_fast", None) or self._backend.encode_batch
        return [e.ids for e in encode(texts, add_special_tokens=True)]

    # -- collation --------------------------------------------------------------------------------

    def collate(self, tokens: Ragged, rows: np.ndarray, texts: list[str], prompt: str, packed: bool) -> dict[str, Any]:
        """CPU tensors for the batch ``rows`` of ``tokens`` (``texts``: those rows' raw inputs, for towers
        that must re-tokenize)."""
        if packed:
            input_ids, position_ids, cu, longest = packed_arrays(tokens, rows, self.position_offset)
            return {
                "input_ids": torch.from_numpy(input_ids),
                "position_ids": torch.from_numpy(position_ids),
                "cu_seq_lens_q": torch.from_numpy(cu),
                "max_length_q": longest,
            }
        input_ids, mask = padded_arrays(tokens, rows, self.pad_id, self.padding_side)
        tensors = {"input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(mask)}
        if self.with_token_type_ids:
            tensors["token_type_ids"] = torch.zeros_like(tensors["input_ids"])
        return tensors

    def collate_static(self, tokens: Ragged, rows: np.ndarray, total_tokens: int, granularity: int) -> dict[str, Any]:
        """A packed batch padded to exactly ``total_tokens`` tokens (``batching.static_arrays``)."""
        return static_arrays(
            tokens, rows, total_tokens, granularity, self.pad_id, self.position_offset, self.position_limit()
        ).tensors()

    def position_limit(self) -> int | None:
        """The longest sequence the model's positions allow (a static batch's fillers stay within it)."""
        limit = getattr(getattr(self.transformer(), "config", None), "max_position_embeddings", None)
        return int(limit) - self.position_offset if isinstance(limit, int) else None

    def prepare(self, prompt: str) -> None:
        """Called once per encode call, before any batch (e.g. to validate tokenization for this prompt)."""
        return None

    # -- forward ----------------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return next(self.module().parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.module().parameters()).dtype

    @abstractmethod
    def module(self) -> torch.nn.Module:
        """The whole model (its parameters give the device and dtype)."""

    @abstractmethod
    def transformer(self) -> torch.nn.Module:
        """The transformers model whose attention implementation packed batches need."""

    @abstractmethod
    def forward(self, tensors: dict[str, Any], packed: bool) -> torch.Tensor:
        """One collated batch -> its embeddings, in batch order."""

    def packed_states(self, tensors: dict[str, Any]) -> torch.Tensor:
        """The transformer's token states (1, tokens, dim) of a packed batch: the part a CUDA graph captures."""
        cu = tensors["cu_seq_lens_q"]
        out = self.transformer()(
            input_ids=tensors["input_ids"],
            position_ids=tensors["position_ids"],
            cu_seq_lens_q=cu,
            cu_seq_lens_k=cu,
            max_length_q=tensors["max_length_q"],
            max_length_k=tensors["max_length_q"],
            return_dict=True,
        )
        return out.last_hidden_state

    @abstractmethod
    def pool_states(self, states: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
        """Packed token states (1, tokens, dim) -> one vector per sequence bounded by ``cu_seqlens``."""

    def forward_static(self, tensors: dict[str, Any], states) -> torch.Tensor:
        """Embeddings of a static batch's real sequences; ``states`` runs the transformer (e.g. as a CUDA graph)."""
        hidden = states(tensors)
        return self.pool_states(hidden[:, : tensors["used"]], tensors["cu_seq_lens_q"][: tensors["real"] + 1])

    @abstractmethod
    def signature(self) -> dict[str, Any]:
        """What turns token states into the returned vector (recorded in results and cache keys)."""

    def enable_packing(self) -> bool:
        """Switch the attention implementation to the varlen one; False when this model cannot take it."""
        if not self.packable:
            return False

        model = self.transformer()
        if not getattr(model, "is_backend_compatible", lambda: False)():
            return False
        config = getattr(model, "config", None)
        window = getattr(config, "sliding_window", None)
        if window and getattr(config, "use_sliding_window", True) and self.max_length > window:
            # packed attention is full (causal) attention within each sequence: only exact up to the window
            log.info(
                "packed batches disabled: %d-token sliding window under a %d-token max length", window, self.max_length
            )
            return False
        try:
            model.set_attn_implementation(varlen.register())
        except (ValueError, ImportError, AttributeError) as exc:
            log.info("packed batches disabled: %s", first_line(exc))
            return False
        self.position_offset = varlen.position_offset(model)
        return model.config._attn_implementation == varlen.NAME


class SentenceTransformerTower(Tower):
    def __init__(self, model, spec: TowerSpec) -> None:
        super().__init__(model.tokenizer, model.max_seq_length, spec)
        self.model = model.eval()
        first = model[0]
        self._st_transformer = type(first).__name__ == "Transformer" and hasattr(first, "auto_model")
        text_only = self._st_transformer and set(getattr(first, "modality_config", {"text": None})) == {"text"}
        self._fast_ok = (
            self._backend is not None
            and text_only
            and getattr(first, "transformer_task", "feature-extraction") == "feature-extraction"
            and getattr(first, "query_expansion", None) is None
        )
        self.packable = self._fast_ok and all(type(m).__name__ in _PACKABLE_ST_MODULES for m in list(model)[1:])
        self._checked: dict[str, bool] = {}
        self._prompt_length: int | None = None
        self.fast_tokenization = self._fast_ok

    def module(self) -> torch.nn.Module:
        return self.model

    def transformer(self) -> torch.nn.Module:
        return self.model[0].auto_model

    @property
    def embedding_dim(self) -> int:
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get())

    def prepare(self, prompt: str) -> None:
        reference = self.model.preprocess(list(_PROBE_TEXTS), prompt=prompt or None)
        self._prompt_length = reference.get("prompt_length")
        if prompt not in self._checked:
            self._checked[prompt] = self._fast_ok and self._matches(reference, prompt)
            if self._fast_ok and not self._checked[prompt]:
                log.warning(
                    "fast tokenization differs from sentence-transformers' preprocess for this model/prompt; "
                    "using preprocess per batch (slower, same results)"
                )
        self.fast_tokenization = self._checked[prompt]

    def _matches(self, reference: dict[str, Any], prompt: str) -> bool:
        tokens = Ragged.from_lists(self.tokenize([prompt + t for t in _PROBE_TEXTS]))
        ours = Tower.collate(self, tokens, np.arange(len(tokens)), list(_PROBE_TEXTS), prompt, packed=False)
        keys = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in reference]
        return set(keys) == {k for k in ours if k in ("input_ids", "attention_mask", "token_type_ids")} and all(
            torch.equal(ours[k], reference[k].to(torch.int64)) for k in keys
        )

    def collate(self, tokens: Ragged, rows: np.ndarray, texts: list[str], prompt: str, packed: bool) -> dict[str, Any]:
        if not self.fast_tokenization:
            features = self.model.preprocess(texts, prompt=prompt or None)
            return {k: v for k, v in features.items() if isinstance(v, torch.Tensor)}
        return super().collate(tokens, rows, texts, prompt, packed)

    def forward(self, tensors: dict[str, Any], packed: bool) -> torch.Tensor:
        features: dict[str, Any] = dict(tensors)
        features["modality"] = "text"
        if self._prompt_length is not None:
            features["prompt_length"] = self._prompt_length
        if not packed:
            return self.model(features)["sentence_embedding"]
        return self.pool_states(self.packed_states(tensors), tensors["cu_seq_lens_q"])

    def pool_states(self, states: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
        features: dict[str, Any] = {"modality": "text", "token_embeddings": states, "cu_seq_lens_q": cu_seqlens}
        if self._prompt_length is not None:
            features["prompt_length"] = self._prompt_length
        for module in list(self.model)[1:]:
            features = module(features)
        return features["sentence_embedding"]

    def signature(self) -> dict[str, Any]:
        modules: list[dict[str, Any]] = [{"module": "AppendEos"}] if self.spec.append_eos else []
        for module in list(self.model)[1:]:
            config = module.get_config_dict() if hasattr(module, "get_config_dict") else {}
            modules.append(
                {
                    "module": type(module).__name__,
                    **{k: v for k, v in config.items() if isinstance(v, (str, int, float, bool, type(None), list))},
                }
            )
        return {"pipeline": modules}


class TransformersTower(Tower):
    def __init__(self, model, tokenizer, spec: TowerSpec) -> None:
        self.pooling = check_pooling(spec.pooling)
        limit = getattr(model.config, "max_position_embeddings", None)
        if limit:
            limit -= varlen.position_offset(model)  # RoBERTa-style models lose padding_idx + 1 positions
        model_max = getattr(tokenizer, "model_max_length", None)
        candidates = [
            x for x in (spec.max_length, model_max if model_max and model_max < 100_000 else None, limit) if x
        ]
        max_length = (spec.max_length or min(candidates)) if candidates else 512
        if spec.max_length and limit and spec.max_length > limit:
            raise MtrbenchError(f"--max-length {spec.max_length} exceeds the {limit} positions of {spec.location}")
        super().__init__(tokenizer, max_length, spec)
        self.model = model
        self.packable = True

    def module(self) -> torch.nn.Module:
        return self.model

    def transformer(self) -> torch.nn.Module:
        return self.model

    @property
    def embedding_dim(self) -> int:
        return int(self.model.config.hidden_size)

    def forward(self, tensors: dict[str, Any], packed: bool) -> torch.Tensor:
        if packed:
            return self.pool_states(self.packed_states(tensors), tensors["cu_seq_lens_q"])
        inputs = {k: v for k, v in tensors.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        out = self.model(**inputs, return_dict=True)
        return pool_padded(out.last_hidden_state, tensors["attention_mask"], self.pooling)

    def pool_states(self, states: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
        return pool_packed(states, cu_seqlens, self.pooling)

    def signature(self) -> dict[str, Any]:
        return {"pooling": self.pooling}
