"""Quality scorers for curated chunks (MTR-SUITE §4.1 keeps only chunks scored "High Quality").

A scorer labels a batch of texts; ``kept`` says which pass. The seed's scorers are Hub classifiers run
through transformers, batched on the GPU when there is one:

* ``nvidia``: the NVIDIA quality classifier (``nvidia/quality-classifier-deberta``), three labels
  High / Medium / Low; kept: High;
* ``fineweb-edu``: the FineWeb-Edu classifier (``HuggingFaceFW/fineweb-edu-classifier``), one regression
  output on a 0-5 educational-value scale; kept: rounded score >= 3, the threshold FineWeb-Edu itself uses.

``nvidia+fineweb-edu`` is the seed's hybrid filter: a chunk must pass both. ``heuristic`` is the offline
default and a stand-in for them (every output that reports quality says so); see ``HeuristicScorer``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mtrbench.data.hub import hub_reachable
from mtrbench.infra.errors import HubUnavailableError, ModelError, UserInputError

NVIDIA_MODEL = "nvidia/quality-classifier-deberta"
FINEWEB_EDU_MODEL = "HuggingFaceFW/fineweb-edu-classifier"
FINEWEB_EDU_THRESHOLD = 3.0
QUALITY_CHOICES = ("heuristic", "nvidia", "fineweb-edu", "nvidia+fineweb-edu", "none")


@dataclass(frozen=True)
class QualityVerdict:
    kept: bool
    score: float  # the scorer's own number (heuristic: rules passed / rules; classifier: probability or grade)
    label: str


class QualityScorer(Protocol):
    name: str
    stand_in: bool  # True: not the seed's classifier; outputs that report quality must say so

    def score(self, texts: list[str]) -> list[QualityVerdict]: ...


_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", re.UNICODE)
# A few very common function words: real prose contains several, word lists and boilerplate rarely do.
_STOP_WORDS = frozenset(
    "the be to of and a in that have it for not on with as you do at this but by from "
    "is are was were or an which their its".split()
)


@dataclass(frozen=True)
class HeuristicRules:
    """Rules in the spirit of the Gopher/C4 quality heuristics; a chunk must pass every one."""

    min_words: int = 50
    min_mean_word_length: float = 3.0
    max_mean_word_length: float = 10.0
    min_alpha_fraction: float = 0.7  # of non-space characters that are letters
    min_stop_words: int = 2
    max_symbol_fraction: float = 0.1  # '#', '{', '}', '|', '<', '>' ... per non-space character


class HeuristicScorer:
    """Offline stand-in for the seed's classifiers: rule-based prose detection (no model, no download).

    It keeps running text and drops lists of words, tables of numbers, markup debris and very short
    fragments. It does not judge fluency or educational value as the seed's classifiers do.
    """

    name = "heuristic"
    stand_in = True

    def __init__(self, rules: HeuristicRules | None = None) -> None:
        self.rules = rules or HeuristicRules()

    def failed_rules(self, text: str) -> list[str]:
        r = self.rules
        words = _WORD.findall(text)
        visible = [c for c in text if not c.isspace()]
        failed = []
        if len(words) < r.min_words:
            failed.append("too few words")
        mean_length = sum(len(w) for w in words) / len(words) if words else 0.0
        if not r.min_mean_word_length <= mean_length <= r.max_mean_word_length:
            failed.append("mean word length")
        if not visible or sum(c.isalpha() for c in visible) / len(visible) < r.min_alpha_fraction:
            failed.append("too few letters")
        if sum(w.lower() in _STOP_WORDS for w in words) < r.min_stop_words:
            failed.append("no function words")
        if visible and sum(c in "#{}|<>[]\\^~=*" for c in visible) / len(visible) > r.max_symbol_fraction:
            failed.append("too many symbols")
        return failed

    def score(self, texts: list[str]) -> list[QualityVerdict]:
        verdicts = []
        for text in texts:
            failed = self.failed_rules(text)
            verdicts.append(
                QualityVerdict(
                    kept=not failed,
                    score=1.0 - len(failed) / 5,
                    label="high" if not failed else "low: " + ", ".join(failed),
                )
            )
        return verdicts


@dataclass(frozen=True)
class ClassifierSpec:
    model: str  # Hub id or local folder
    kind: str  # "label": keep when the top label is in keep_labels; "regression": keep when round(score) >= threshold
    keep_labels: tuple[str, ...] = ()
    threshold: float = 0.0
    max_length: int = 512
    batch_size: int = 64


NVIDIA_SPEC = ClassifierSpec(NVIDIA_MODEL, kind="label", keep_labels=("High",), max_length=1024)
FINEWEB_EDU_SPEC = ClassifierSpec(FINEWEB_EDU_MODEL, kind="regression", threshold=FINEWEB_EDU_THRESHOLD)


class TransformersScorer:
    """A sequence classifier from the Hub (or a local folder) run batched through transformers."""

    stand_in = False

    def __init__(self, spec: ClassifierSpec, device: str = "cpu") -> None:
        # deferred: torch and transformers load only when a Hub classifier is chosen
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.spec = spec
        self.name = spec.model
        self.device = torch.device(device)
        # Without the Hub, only a local folder or an earlier download can work: do not wait for retries.
        local_only = not Path(spec.model).expanduser().exists() and not hub_reachable()
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(spec.model, local_files_only=local_only)
            self.model = (
                AutoModelForSequenceClassification.from_pretrained(spec.model, local_files_only=local_only)
                .to(self.device)
                .eval()
            )
        except OSError as err:
            why = (
                "it is not in the local Hugging Face cache and the Hub is unreachable"
                if local_only
                else " ".join(str(err).split())[:160]
            )
            raise HubUnavailableError(
                f"quality classifier {spec.model} could not be loaded: {why}; use --quality "
                "heuristic offline (the documented stand-in)"
            ) from None
        labels = self.model.config.id2label
        if spec.kind == "label" and not set(spec.keep_labels) <= set(labels.values()):
            raise ModelError(
                f"quality classifier {spec.model}: labels {sorted(labels.values())} do not include "
                f"{list(spec.keep_labels)}"
            )
        if spec.kind == "regression" and self.model.config.num_labels != 1:
            raise ModelError(
                f"quality classifier {spec.model}: a regression scorer needs one output, it has "
                f"{self.model.config.num_labels}"
            )

    def score(self, texts: list[str]) -> list[QualityVerdict]:
        import torch  # deferred: only a Hub classifier needs torch (loaded by __init__ already)

        verdicts: list[QualityVerdict] = []
        for start in range(0, len(texts), self.spec.batch_size):
            batch = texts[start : start + self.spec.batch_size]
            inputs = self.tokenizer(
                batch, padding=True, truncation=True, max_length=self.spec.max_length, return_tensors="pt"
            ).to(self.device)
            with torch.inference_mode():
                logits = self.model(**inputs).logits.float().cpu()
            if self.spec.kind == "regression":
                for value in logits[:, 0].tolist():
                    grade = int(round(max(0.0, min(5.0, value))))
                    verdicts.append(QualityVerdict(kept=grade >= self.spec.threshold, score=value, label=str(grade)))
            else:
                probabilities = logits.softmax(dim=-1)
                for row in probabilities:
                    top = int(row.argmax())
                    label = self.model.config.id2label[top]
                    verdicts.append(
                        QualityVerdict(kept=label in self.spec.keep_labels, score=float(row[top]), label=label)
                    )
        return verdicts


class AllOf:
    """Several scorers; a chunk is kept only when every one keeps it (the seed's hybrid filter)."""

    stand_in = False

    def __init__(self, scorers: list[QualityScorer]) -> None:
        self.scorers = scorers
        self.name = "+".join(s.name for s in scorers)
        self.stand_in = any(s.stand_in for s in scorers)

    def score(self, texts: list[str]) -> list[QualityVerdict]:
        per_scorer = [s.score(texts) for s in self.scorers]
        out = []
        for verdicts in zip(*per_scorer):
            out.append(
                QualityVerdict(
                    kept=all(v.kept for v in verdicts),
                    score=min(v.score for v in verdicts),
                    label="; ".join(f"{s.name}: {v.label}" for s, v in zip(self.scorers, verdicts)),
                )
            )
        return out


class KeepAll:
    name = "none"
    stand_in = False

    def score(self, texts: list[str]) -> list[QualityVerdict]:
        return [QualityVerdict(kept=True, score=1.0, label="not scored") for _ in texts]


def build_scorer(choice: str, device: str = "cpu") -> QualityScorer:
    if choice == "heuristic":
        return HeuristicScorer()
    if choice == "none":
        return KeepAll()
    if choice == "nvidia":
        return TransformersScorer(NVIDIA_SPEC, device)
    if choice == "fineweb-edu":
        return TransformersScorer(FINEWEB_EDU_SPEC, device)
    if choice == "nvidia+fineweb-edu":
        return AllOf([TransformersScorer(NVIDIA_SPEC, device), TransformersScorer(FINEWEB_EDU_SPEC, device)])
    raise UserInputError(f"--quality must be one of {', '.join(QUALITY_CHOICES)}, got '{choice}'")
