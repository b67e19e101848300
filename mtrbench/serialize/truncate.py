"""Fit a serialized query into the model's max length, measured with the model's own tokenizer.

``left`` (default): the current question is kept whole and the oldest history text is dropped
first (token-exact, cut at a token boundary of the history). ``right``: the tokenizer's
right-truncation that sentence-transformers applies and mteb / the MTR-SUITE scripts inherit
today; on long conversations it cuts the newest text, the current question included.
``none``: pass the text on untouched (for retrievers without a length limit, e.g. BM25).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mtrbench.infra.errors import MtrbenchError
from mtrbench.serialize.history import HISTORY_FIRST, Serialized

SIDES = ("left", "right", "none")
DEFAULT_TRUNCATE = "left"  # drops the oldest history, never the current question


@dataclass
class TruncationStats:
    queries: int = 0
    truncated: int = 0  # lost any text
    question_cut: int = 0  # lost part of the current question
    over_model_limit: int = 0  # given whole (--truncate none) though longer than the model reads: it cuts them

    def as_dict(self) -> dict[str, float | int]:
        n = max(self.queries, 1)
        recorded: dict[str, float | int] = {
            "queries": self.queries,
            "truncated": self.truncated,
            "question_cut": self.question_cut,
            "truncated_share": round(self.truncated / n, 5),
            "question_cut_share": round(self.question_cut / n, 5),
        }
        if self.over_model_limit:  # absent when none: results without one stay as they were
            recorded["over_model_limit"] = self.over_model_limit
            recorded["over_model_limit_share"] = round(self.over_model_limit / n, 5)
        return recorded


@dataclass
class Truncator:
    tokenizer: object | None
    max_length: int | None
    prompt: str = ""
    side: str = "left"
    stats: TruncationStats = field(default_factory=TruncationStats)

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise MtrbenchError(f"--truncate must be one of {', '.join(SIDES)}, got '{self.side}'")
        self.limited = self.tokenizer is not None and bool(self.max_length)
        if not self.limited:
            self.side = "none"
        if self.limited:
            special = self.tokenizer.num_special_tokens_to_add(pair=False)
            self.budget = self.max_length - special
            if self.side != "none" and self.budget - self._count(self.prompt) < 8:
                raise MtrbenchError(f"max length {self.max_length} leaves no room after the prompt {self.prompt!r}")

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]

    def _count(self, text: str) -> int:
        return len(self._ids(text)) if text else 0

    def _fits(self, text: str) -> int:
        """Tokens over budget for prompt + text as the encoder will see it (<= 0: fits)."""
        return self._count(self.prompt + text) - self.budget

    def __call__(self, serialized: Serialized) -> str:
        self.stats.queries += 1
        full = serialized.text()
        if self.side == "none":
            # passed on whole; a model with a length limit then cuts it itself, from the right: counted
            if self.limited and self._fits(full) > 0:
                self.stats.over_model_limit += 1
            return full
        if self._fits(full) <= 0:
            return full
        self.stats.truncated += 1
        if self.side == "right":
            return self._right(serialized, full)
        return self._left(serialized)

    def _right(self, serialized: Serialized, full: str) -> str:
        prompt_len = len(self.prompt)
        enc = self.tokenizer(self.prompt + full, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        end = enc["offset_mapping"][self.budget - 1][1] - prompt_len
        kept = full[: max(end, 0)]
        question_last = serialized.fmt.order == HISTORY_FIRST or not serialized.history
        if end < (len(full) if question_last else len(serialized.current)):
            self.stats.question_cut += 1
        return kept

    def _left(self, serialized: Serialized) -> str:
        current, question = serialized.current, serialized.question
        if self._fits(question) > 0:
            # The question alone is too long: keep its beginning, drop all history (so no role prefix).
            self.stats.question_cut += 1
            enc = self.tokenizer(
                self.prompt + question, add_special_tokens=False, return_offsets_mapping=True, verbose=False
            )
            end = enc["offset_mapping"][self.budget - 1][1] - len(self.prompt)
            return question[:end]
        history = serialized.history_text()
        enc = self.tokenizer(history, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offsets = enc["offset_mapping"]
        sep_cost = self._count(serialized.fmt.separator.strip()) if serialized.fmt.separator.strip() else 0
        keep = min(self.budget - self._count(self.prompt + current) - sep_cost, len(offsets))
        oldest_at_start = serialized.fmt.order == HISTORY_FIRST
        while keep > 0:
            if oldest_at_start:
                kept = history[offsets[len(offsets) - keep][0] :]
            else:
                kept = history[: offsets[keep - 1][1]]
            over = self._fits(serialized.text(kept))
            if over <= 0:
                return serialized.text(kept)
            keep -= over
        return question
