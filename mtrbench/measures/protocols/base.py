"""A scoring protocol: the conventions a benchmark's own evaluation code follows when it turns a run into
numbers (which queries count, what a hit is, how means are rounded), and how its queries are serialized.

``trec_eval`` is mtrbench's own protocol (docs/metrics.md); an official protocol reproduces one benchmark's
published evaluation script (docs/protocols.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from mtrbench.formats.qrels import Qrels
from mtrbench.formats.run import Run
from mtrbench.infra.errors import UserInputError
from mtrbench.measures.base import Measure
from mtrbench.measures.compute import Evaluation, evaluate

TREC_EVAL = "trec_eval"
OFFICIAL = "official"
CHOICES = (OFFICIAL, TREC_EVAL)  # what --protocol takes

Scorer = Callable[[Qrels, Run, Sequence[Measure], int], Evaluation]


def trec_eval_scorer(qrels: Qrels, run: Run, measures: Sequence[Measure], relevance_level: int) -> Evaluation:
    return evaluate(qrels, run, measures, relevance_level=relevance_level)


@dataclass(frozen=True)
class ScoringProtocol:
    name: str  # trec_eval, or the benchmark whose official conventions these are (mtrag, bridge, mtr-suite)
    summary: str  # one line: what differs from trec_eval
    scorer: Scorer = trec_eval_scorer
    prefix_first_turn: bool = False  # a query with no history reads "User: q", not the bare question
    families: tuple[str, ...] | None = None  # measure families defined under it; None: every family
    # The grade its evaluation counts as relevant (the organisers' trec_eval -l); None: the task's or --relevance-level
    relevance_level: int | None = None

    @property
    def setting(self) -> str:
        """What a result records (``settings.protocol``): ``trec_eval`` or ``official:<benchmark>``."""
        return TREC_EVAL if self.name == TREC_EVAL else f"{OFFICIAL}:{self.name}"

    @property
    def is_official(self) -> bool:
        return self.name != TREC_EVAL

    def check(self, measures: Sequence[Measure]) -> None:
        """Refuse measures this protocol does not define, before anything is loaded."""
        if self.families is None:
            return
        undefined = [str(m) for m in measures if m.family not in self.families]
        if undefined:
            raise UserInputError(
                f"the official {self.name} protocol defines {', '.join(self.families)} only, not "
                f"{', '.join(undefined)}: drop them from --metrics or use --protocol trec_eval"
            )

    def level(self, asked: int | None, fallback: int = 1) -> int:
        """The relevance level scores are computed at: an official protocol's own, where ``asked`` (None: not
        asked) must agree with it; trec_eval's is ``asked``, else ``fallback``."""
        if self.relevance_level is None:
            return fallback if asked is None else asked
        if asked is not None and asked != self.relevance_level:
            raise UserInputError(
                f"--relevance-level {asked} contradicts --protocol {self.setting}, whose official evaluation counts "
                f"grade >= {self.relevance_level} as relevant: drop --relevance-level, or score with --protocol "
                f"{TREC_EVAL} --relevance-level {asked}"
            )
        return self.relevance_level

    def score(self, qrels: Qrels, run: Run, measures: Sequence[Measure], relevance_level: int) -> Evaluation:
        """Refuses a ``relevance_level`` other than an official protocol's own: never an "official" number at
        another threshold."""
        return self.scorer(qrels, run, measures, self.level(relevance_level))


@dataclass
class RoundedEvaluation(Evaluation):
    """An evaluation whose whole-run means are rounded as an official script rounds them; ``skipped``: judged
    queries the protocol leaves out (MTRAG: those missing from the run)."""

    decimals: int = 5
    skipped: list[str] = field(default_factory=list)

    def mean(self, qids: Iterable[str] | None = None) -> dict[str, float]:
        means = super().mean(qids)
        return means if qids is not None else {key: round(value, self.decimals) for key, value in means.items()}
