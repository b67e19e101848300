"""Scoring protocols (``--protocol official|trec_eval``): trec_eval's conventions, or a benchmark's own
evaluation reproduced (MTRAG, BRIDGE, MTR-SUITE). A task card names its official protocol and its default."""

from __future__ import annotations

from typing import NamedTuple, Protocol

from mtrbench.infra.errors import UserInputError, unknown_name
from mtrbench.measures.protocols.base import (
    CHOICES,
    OFFICIAL,
    TREC_EVAL,
    RoundedEvaluation,
    ScoringProtocol,
    trec_eval_scorer,
)
from mtrbench.measures.protocols.bridge import score_bridge
from mtrbench.measures.protocols.ikat import FAMILIES as IKAT_FAMILIES
from mtrbench.measures.protocols.ikat import score_ikat
from mtrbench.measures.protocols.mtrag import FAMILIES as MTRAG_FAMILIES
from mtrbench.measures.protocols.mtrag import CollectionRow, all_row, score_mtrag


class CardProtocols(Protocol):
    """What a task card says about scoring (``data.cards.TaskCard`` has it; measures does not import data)."""

    name: str
    official_protocol: str | None
    protocol: str
    relevance_level: int


class Choice(NamedTuple):
    """The protocol a run is scored with and the grade its binary measures count as relevant."""

    protocol: ScoringProtocol
    relevance_level: int


PROTOCOLS = {
    p.name: p
    for p in (
        ScoringProtocol(
            TREC_EVAL,
            "trec_eval's measures (pytrec_eval); queries without a relevant document left out, "
            "judged queries missing from the run scored 0",
        ),
        ScoringProtocol(
            "mtrag",
            "run_retrieval_eval.py: ids equal to the query id dropped, queries without a relevant "
            "document kept (0), judged queries missing from the run skipped, means rounded to 5 "
            "decimals",
            score_mtrag,
            families=MTRAG_FAMILIES,
            relevance_level=1,  # pytrec_eval's default, which the script keeps
        ),
        ScoringProtocol(
            "bridge",
            "retrieval/evaluation.py: P@k over the documents retrieved, nDCG@k with binary gains "
            "and an ideal over all relevant documents",
            score_bridge,
            relevance_level=1,
        ),
        ScoringProtocol(
            "mtr-suite",
            "the MTR-SUITE scripts' serialization: a first turn reads 'User: q'; trec_eval's "
            "measures (equal to its one-gold-passage Recall, MRR and nDCG)",
            trec_eval_scorer,
            prefix_first_turn=True,
            relevance_level=1,
        ),
        ScoringProtocol(
            "ikat",
            "TREC iKAT's trec_eval -c: every turn in the qrels counted, a turn missing from the run or "
            "without a judged passage above grade 0 scored 0; graded nDCG, binary measures at grade >= 2",
            score_ikat,
            families=IKAT_FAMILIES,
            relevance_level=2,
        ),
        ScoringProtocol(
            "ikat-ptkb",
            "TREC iKAT 2023's PTKB statement ranking: trec_eval -c over binary (0/1) judgments, every turn in "
            "the qrels counted, a turn missing from the run or without a relevant statement scored 0",
            score_ikat,
            families=IKAT_FAMILIES,
            relevance_level=1,
        ),
        ScoringProtocol(
            "trec-cast",
            "TREC CAsT 2022's trec_eval -c: every turn in the qrels counted, a turn missing from the run "
            "or without a judged passage above grade 0 scored 0; graded nDCG, binary measures at grade >= 2",
            score_ikat,
            families=IKAT_FAMILIES,
            relevance_level=2,
        ),
    )
}
OFFICIAL_NAMES = tuple(name for name in PROTOCOLS if name != TREC_EVAL)


def check_choice(choice: str, flag: str = "--protocol") -> str:
    """``official``, ``trec_eval`` or ``official:<benchmark>`` (what results record)."""
    if choice in CHOICES:
        return choice
    kind, _, name = choice.partition(":")
    if kind == OFFICIAL and name in OFFICIAL_NAMES:
        return choice
    raise unknown_name(
        "scoring protocol",
        choice,
        [*CHOICES, *(f"{OFFICIAL}:{n}" for n in OFFICIAL_NAMES)],
        hint=f"{flag} takes official or trec_eval (docs/protocols.md)",
    )


def resolve(choice: str | None, official: str | None, default: str, task: str) -> ScoringProtocol:
    """The protocol a task is scored with: ``choice`` (None: the card's ``default``) against the card's
    ``official`` protocol name (None: the task has none)."""
    wanted = check_choice(choice or default)
    if wanted == TREC_EVAL:
        return PROTOCOLS[TREC_EVAL]
    named = wanted.partition(":")[2]
    if official is None:
        raise UserInputError(
            f"task '{task}' has no official protocol (only {', '.join(OFFICIAL_NAMES)} benchmarks "
            f"do): use --protocol trec_eval"
        )
    if named and named != official:
        raise UserInputError(
            f"--protocol {wanted}: task '{task}' follows the official {official} protocol, not {named}"
        )
    return PROTOCOLS[official]


def for_card(choice: str | None, card: CardProtocols) -> ScoringProtocol:
    """:func:`choose`'s protocol for a card and no --relevance-level (eval, export, mteb's tasks): the card's
    level is then its official protocol's, or refused."""
    return choose(choice, None, card).protocol


def choose(choice: str | None, relevance_level: int | None, card: CardProtocols | None = None) -> Choice:
    """The protocol and relevance level a run is scored with, from ``--protocol`` and ``--relevance-level`` (None:
    not given) and the task's card (None: qrels without a card). Without ``--protocol``: the card's default (its
    official protocol where it has one), else trec_eval. An official protocol counts its own benchmark's grade as
    relevant: a ``--relevance-level`` or a card that says otherwise is refused, since a number computed at another
    threshold is not the official one (docs/protocols.md). ``trec_eval`` takes ``--relevance-level``, else the
    card's level, else 1."""
    protocol = (
        for_run(choice or TREC_EVAL)
        if card is None
        else resolve(choice, card.official_protocol, card.protocol, card.name)
    )
    card_level = card.relevance_level if card is not None else 1
    if card is not None and protocol.relevance_level not in (None, card_level):
        raise UserInputError(
            f"task '{card.name}': its card's relevance_level {card_level} contradicts {protocol.setting}, which "
            f"counts grade >= {protocol.relevance_level} as relevant"
        )
    return Choice(protocol, protocol.level(relevance_level, card_level))


def official_choices() -> tuple[str, ...]:
    """Every registered official protocol as ``--protocol`` names it (``official:<benchmark>``), for help texts."""
    return tuple(f"{OFFICIAL}:{name}" for name in OFFICIAL_NAMES)


def for_run(choice: str) -> ScoringProtocol:
    """The protocol of ``mtrbench score`` without a task card: ``trec_eval`` or ``official:<benchmark>``
    (``official`` alone needs a card to name the benchmark: :func:`resolve`)."""
    wanted = check_choice(choice)
    if wanted == TREC_EVAL:
        return PROTOCOLS[TREC_EVAL]
    if wanted == OFFICIAL:
        raise UserInputError(
            f"--protocol official needs a task to name its benchmark: give --task, or "
            f"{', '.join(f'{OFFICIAL}:{n}' for n in OFFICIAL_NAMES)}"
        )
    return PROTOCOLS[wanted.partition(":")[2]]


__all__ = [
    "CHOICES",
    "OFFICIAL",
    "Choice",
    "OFFICIAL_NAMES",
    "PROTOCOLS",
    "TREC_EVAL",
    "CollectionRow",
    "RoundedEvaluation",
    "ScoringProtocol",
    "all_row",
    "check_choice",
    "choose",
    "for_card",
    "for_run",
    "official_choices",
    "resolve",
    "score_bridge",
    "score_ikat",
    "score_mtrag",
]
