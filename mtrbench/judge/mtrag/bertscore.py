"""BertscoreP, BertscoreR and BertKPrec through the ``bert-score`` library, as the official scripts call it
(``evaluate``'s ``bertscore`` metric: ``lang="en"``, ``rescale_with_baseline=True``,
``model_type="microsoft/deberta-xlarge-mnli"``).

Any model is accepted. bert-score knows the layer to read and ships the rescaling baseline only for the models
it lists; for another model give ``num_layers`` (default: its last layer) and a ``baseline_path``, or turn
rescaling off (the result then records ``rescaled: false``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from mtrbench.infra.errors import ModelError, UserInputError, first_line
from mtrbench.judge.mtrag.names import OFFICIAL_MODEL


@dataclass(frozen=True)
class BertScoreOptions:
    model: str = OFFICIAL_MODEL
    num_layers: int | None = None  # bert-score's table for the models it knows, else the model's last layer
    rescale: bool = True
    baseline_path: str | None = None  # a rescaling baseline TSV for a model bert-score has none for
    batch_size: int = 16
    device: str | None = None  # bert-score's choice (cuda when available) when None

    def describe(self) -> dict[str, object]:
        return {
            "model": self.model,
            "num_layers": self.num_layers,
            "rescale_with_baseline": self.rescale,
            "baseline_path": self.baseline_path,
            "lang": "en",
        }


def _import_bert_score():
    try:
        import bert_score
    except ImportError:
        raise ModelError(
            "BERTScore needs the bert-score package: pip install bert-score (or pip install -e '.[mtrag]')"
        ) from None
    return bert_score


class BertScorer:
    """Precision and recall of candidate/reference pairs, in one batched library call per list of pairs."""

    def __init__(self, options: BertScoreOptions) -> None:
        self.options = options

    def resolved_layers(self) -> int:
        from bert_score.utils import model2layers

        if self.options.num_layers is not None:
            return self.options.num_layers
        if self.options.model in model2layers:
            return model2layers[self.options.model]
        from transformers import AutoConfig

        try:
            return int(AutoConfig.from_pretrained(self.options.model).num_hidden_layers)
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot read the BERTScore model '{self.options.model}': {exc}") from None

    def check(self) -> None:
        """Fail before any work when rescaling has no baseline for this model."""
        bert_score = _import_bert_score()
        if not self.options.rescale:
            return
        path = self.options.baseline_path or os.path.join(
            os.path.dirname(bert_score.__file__), "rescale_baseline", "en", f"{self.options.model}.tsv"
        )
        if not os.path.isfile(path):
            raise UserInputError(
                f"bert-score has no rescaling baseline for '{self.options.model}'"
                + (f" ({path} does not exist)" if self.options.baseline_path else "")
                + ": give --bertscore-baseline FILE.tsv or --bertscore-no-rescale"
            )

    @cached_property
    def _scorer(self):
        bert_score = _import_bert_score()
        self.check()
        try:
            return bert_score.BERTScorer(
                model_type=self.options.model,
                num_layers=self.resolved_layers(),
                lang="en",
                rescale_with_baseline=self.options.rescale,
                baseline_path=self.options.baseline_path,
                batch_size=self.options.batch_size,
                device=self.options.device,
            )
        except OSError as exc:  # not on the Hub, no network, not a model folder
            raise ModelError(f"cannot load the BERTScore model '{self.options.model}': {first_line(exc)}") from None

    def load(self) -> None:
        """Load the model now, so that a model that cannot be loaded fails before slower or paid work."""
        _ = self._scorer

    def precision_recall(self, candidates: Sequence[str], references: Sequence[str]) -> list[tuple[float, float]]:
        """(P, R) per pair."""
        if len(candidates) != len(references):
            raise ValueError("candidates and references differ in number")
        if not candidates:
            return []
        precision, recall, _ = self._scorer.score(list(candidates), list(references))
        return [(float(p), float(r)) for p, r in zip(precision.tolist(), recall.tolist())]
