"""Pointwise LLM rerankers by their published recipes, with plain transformers (sentence-transformers'
``CrossEncoder`` reads a causal LM through its chat template, not through these prompts).

* Yes/no rerankers (Qwen3-Reranker): a causal LM reads a fixed judge prompt around the instruction, the query and
  the document; the score is the probability of "yes" against "no" at the last position (softmax over the two
  logits), left padding so that the last position is always the prompt's last token.
* monoT5: a T5 reads ``Query: q Document: d Relevant:``; the score is the log-probability of "true" against
  "false" at the first decoder step (log-softmax over the two logits), as pygaggle ranks by it.

Both record their prompt's hash with the model, so a changed template never passes for the old one.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from typing import Any

from mtrbench.infra.errors import MtrbenchError, first_line
from mtrbench.infra.reporting import progress_bar
from mtrbench.models.loading import ModelSource, pick_device, pick_dtype
from mtrbench.retrieve.rerank import Pair

# Qwen3-Reranker's published prompt: the model was trained on this exact text, so it is reproduced as a format.
QWEN3_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
)
QWEN3_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
QWEN3_PAIR = "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}"
QWEN3_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
QWEN3_MAX_LENGTH = 8192  # the model card's example; the model reads up to 32k
MONOT5_INPUT = "Query: {query} Document: {document} Relevant:"
MONOT5_MAX_LENGTH = 512


def template_hash(*parts: str) -> str:
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()[:12]


def _token_id(tokenizer: Any, candidates: tuple[str, ...], model: str) -> int:
    """The vocabulary id of the first token spelled as one of ``candidates`` (``▁true`` in T5's vocabulary)."""
    vocab = tokenizer.get_vocab()
    for token in candidates:
        if token in vocab:
            return int(vocab[token])
    raise MtrbenchError(f"--rerank {model}: the tokenizer has no token {' or '.join(map(repr, candidates))}")


class _HFScorer(ABC):
    """Loads a transformers model and its tokenizer from a Hub id or a local folder; a recipe scores its batches."""

    recipe = ""

    def __init__(self, model: str, device: str, dtype: str, max_length: int, auto_class: str) -> None:
        import torch
        import transformers

        source = ModelSource(model, None)
        self.device = pick_device(device)
        self.dtype = pick_dtype(dtype, self.device)
        torch_dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[self.dtype]
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(
                source.location, local_files_only=source.local_only
            )
            loader = getattr(transformers, auto_class)
            self.model = loader.from_pretrained(source.location, dtype=torch_dtype, local_files_only=source.local_only)
        except OSError as exc:
            raise MtrbenchError(f"--rerank {model}: cannot load a {self.recipe} reranker ({first_line(exc)})") from None
        self.model.to(self.device).eval()
        source.resolve_revision()
        self.source, self.name, self.requested = source, source.name, model
        self.max_length = max_length

    def score(self, pairs: list[Pair], batch_size: int, show_progress: bool) -> list[float]:
        import torch

        scores: list[float] = []
        bar = progress_bar(total=len(pairs), desc=f"rerank ({self.name})", unit="pair", show_progress=show_progress)
        with torch.inference_mode():
            for start in range(0, len(pairs), batch_size):
                batch = pairs[start : start + batch_size]
                scores.extend(float(s) for s in self._batch_scores(batch).float().cpu().tolist())
                bar.update(len(batch))
        bar.close()
        return scores

    @abstractmethod
    def _batch_scores(self, batch: list[Pair]) -> Any:
        """One relevance score per (query, document) pair of ``batch``, as a tensor."""

    def _base_settings(self) -> dict[str, Any]:
        return {
            "model": self.source.name,
            "revision": self.source.revision,
            "kind": self.recipe,
            "max_length": self.max_length,
            "dtype": self.dtype,
        }


class YesNoScorer(_HFScorer):
    """A causal LM judged on "yes" against "no" (Qwen3-Reranker's recipe)."""

    recipe = "yes-no"

    def __init__(
        self,
        model: str,
        device: str = "auto",
        dtype: str = "auto",
        max_length: int | None = None,
        instruction: str = QWEN3_INSTRUCTION,
    ) -> None:
        super().__init__(model, device, dtype, max_length or QWEN3_MAX_LENGTH, "AutoModelForCausalLM")
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.instruction = instruction
        self.yes_id = _token_id(self.tokenizer, ("yes",), model)
        self.no_id = _token_id(self.tokenizer, ("no",), model)
        self._prefix = self.tokenizer.encode(QWEN3_PREFIX, add_special_tokens=False)
        self._suffix = self.tokenizer.encode(QWEN3_SUFFIX, add_special_tokens=False)

    def _batch_scores(self, batch: list[Pair]) -> Any:
        import torch

        budget = max(1, self.max_length - len(self._prefix) - len(self._suffix))
        texts = [QWEN3_PAIR.format(instruction=self.instruction, query=q, document=d) for q, d in batch]
        middle = self.tokenizer(texts, add_special_tokens=False, truncation=True, max_length=budget)["input_ids"]
        encoded = self.tokenizer.pad(
            {"input_ids": [self._prefix + ids + self._suffix for ids in middle]}, padding=True, return_tensors="pt"
        ).to(self.device)
        last = self.model(**encoded).logits[:, -1, :]
        pair = torch.stack([last[:, self.no_id], last[:, self.yes_id]], dim=1)
        return torch.softmax(pair.float(), dim=1)[:, 1]

    def settings(self) -> dict[str, Any]:
        return {
            **self._base_settings(),
            "instruction": self.instruction,
            "template_hash": template_hash(QWEN3_PREFIX, QWEN3_PAIR, QWEN3_SUFFIX),
            "score": "softmax(no, yes logits at the last position)[yes]",
        }


class MonoT5Scorer(_HFScorer):
    """A T5 judged on "true" against "false" at the first decoder step (monoT5's recipe)."""

    recipe = "monot5"

    def __init__(self, model: str, device: str = "auto", dtype: str = "auto", max_length: int | None = None) -> None:
        super().__init__(model, device, dtype, max_length or MONOT5_MAX_LENGTH, "AutoModelForSeq2SeqLM")
        self.true_id = _token_id(self.tokenizer, ("▁true", "true"), model)
        self.false_id = _token_id(self.tokenizer, ("▁false", "false"), model)

    def _batch_scores(self, batch: list[Pair]) -> Any:
        import torch

        texts = [MONOT5_INPUT.format(query=q, document=d) for q, d in batch]
        encoded = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        ).to(self.device)
        start = self.model.config.decoder_start_token_id
        decoder = torch.full((len(batch), 1), start, dtype=torch.long, device=self.device)
        logits = self.model(**encoded, decoder_input_ids=decoder).logits[:, 0, :]
        pair = torch.stack([logits[:, self.false_id], logits[:, self.true_id]], dim=1)
        return torch.log_softmax(pair.float(), dim=1)[:, 1]

    def settings(self) -> dict[str, Any]:
        return {
            **self._base_settings(),
            "template_hash": template_hash(MONOT5_INPUT),
            "score": "log_softmax(false, true logits at the first decoder step)[true]",
        }
