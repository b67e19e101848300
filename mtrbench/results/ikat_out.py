"""TREC iKAT run files and mtrbench: a result written as the official run (``eval --ikat-out``), and an official run
read back as a run over a task's queries (``score --predictions RUN.json --task ikat-*``), checked as the organisers'
validators check them (mtrbench.formats.ikat_run)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from mtrbench.data.cards import TaskCard
from mtrbench.data.loaders.ikat_ptkb import statement_doc_id
from mtrbench.data.model import TaskData
from mtrbench.formats.generations import Generation
from mtrbench.formats.ikat_run import (
    IkatRun,
    RunChecks,
    TopicTurns,
    TurnOutput,
    check_run,
    ikat_document,
    ranked_passages,
    read_ikat_run,
    require_year,
    write_ikat_run,
)
from mtrbench.formats.run import Run
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.results.result import Result
from mtrbench.serialize.ptkb import PtkbChoice, parse_ptkb, ptkb_of

log = logging.getLogger(__name__)
IKAT_FORMATS = ("ikat", "ikat-ptkb")


def card_year(card: TaskCard) -> int:
    """The iKAT year of a card (the PTKB ranking task is 2023's)."""
    if card.format not in IKAT_FORMATS:
        raise UserInputError(f"task '{card.name}' is not a TREC iKAT task (ikat-2023, ikat-2024, ikat-2025, ...)")
    return int(card.loader_options.get("year") or 2023)


def topic_turns(task: TaskData) -> TopicTurns:
    turns: dict[str, list[str]] = {}
    statements: dict[str, list[str]] = {}
    for q in task.queries:
        turns.setdefault(q.conversation_id, []).append(q.qid)
        statements.setdefault(q.conversation_id, list(ptkb_of(q)))
    return TopicTurns(turns, statements)


def task_run(path: Path, card: TaskCard, task: TaskData) -> tuple[Run, IkatRun]:
    """The official run at ``path`` as a run over ``task``: the passage ranking (the PTKB ranking for the PTKB
    task, statement ids as its corpus names them). A turn id that is no turn of the task, or a run in another year's
    layout, is one error."""
    ikat = read_ikat_run(path)
    require_year(ikat, card_year(card), path, card.name)
    known = {q.qid: q.conversation_id for q in task.queries}
    for n, turn in enumerate(ikat.turns):
        if turn.turn_id not in known:
            raise DataError(f"{path} turn {n}: turn id '{turn.turn_id}' is no turn of {card.name} ({task.split})")
    if card.format == "ikat-ptkb":
        ranked = ikat.ptkb_run()
        return {
            qid: {statement_doc_id(known[qid], sid): s for sid, s in docs.items()} for qid, docs in ranked.items()
        }, ikat
    return ikat.passage_run(), ikat


def statements_used(task: TaskData, choice: PtkbChoice | None) -> dict[str, list[tuple[str, str, float]]]:
    """Per turn, the personal statements its query carried (``--ptkb``), best first, scored by position."""
    out: dict[str, list[tuple[str, str, float]]] = {}
    for q in task.queries:
        if choice is None or choice.kind == "top":
            out[q.qid] = []
            continue
        ptkb = ptkb_of(q)
        ids = choice.statement_ids(q)
        out[q.qid] = [(sid, ptkb[sid], float(len(ids) - i)) for i, sid in enumerate(ids)]
    return out


def write_ikat_out(
    path: Path, result: Result, card: TaskCard, task: TaskData, passage_db: Path | None = None
) -> RunChecks:
    """``result``'s run over ``task`` as the official run file of the card's year (no response text), checked."""
    run = result.run()
    choice = parse_ptkb(result.settings.get("ptkb"))
    if choice is not None and choice.kind == "top":
        log.warning("--ikat-out: the statements ranked by top:K are not recorded in the result; none are written")
    used = statements_used(task, choice)
    turns = [TurnOutput(q.qid, ranked_passages(run.get(q.qid, {})), "", used.get(q.qid, [])) for q in task.queries]
    name = f"{result.model_name.replace('/', '__')}-{result.history or 'full'}"
    return _write_checked(path, card, task, turns, name, passage_db)


def write_generation_ikat_out(
    path: Path,
    card: TaskCard,
    task: TaskData,
    run: Run | None,
    generations: Mapping[str, Generation],
    passage_db: Path | None = None,
) -> RunChecks:
    """Generated answers as the official run: each turn's response text, its retrieval run's passages (with
    --oracle, the passages shown) and, as used, the passages shown to the generator; checked."""
    turns = []
    for q in task.queries:
        generation = generations.get(q.qid)
        shown = generation.passages if generation is not None else ()
        scores = run.get(q.qid, {}) if run is not None else {doc: float(len(shown) - i) for i, doc in enumerate(shown)}
        answer = generation.answer if generation is not None else ""
        turns.append(TurnOutput(q.qid, ranked_passages(scores), answer, [], tuple(shown)))
    generator = next((g.generator for g in generations.values() if g.generator), "generator")
    return _write_checked(path, card, task, turns, generator.replace("/", "__"), passage_db)


def _write_checked(
    path: Path, card: TaskCard, task: TaskData, turns: list[TurnOutput], name: str, passage_db: Path | None
) -> RunChecks:
    """Write the run file of the card's year and check it: an error among the checks is one error."""
    if card.format != "ikat":
        raise UserInputError(f"--ikat-out writes a passage-ranking run: task '{card.name}' is not ikat-2023/2024/2025")
    year = card_year(card)
    corpus = task.corpus
    texts = {doc: corpus.texts[corpus.position(doc)] for t in turns for doc, _ in t.passages if doc in corpus}
    write_ikat_run(path, ikat_document(turns, year, name, "automatic", texts))
    checks = check_run(read_ikat_run(path), topic_turns(task), year, passage_db)
    if checks.errors:
        raise DataError(f"{path} fails the iKAT run checks: {checks.errors[0]} ({len(checks.errors)} errors)")
    return checks
