"""What a `mtrbench compare` table is built from: the judgments that score systems given as TREC runs, the
measures' per-query keys and printed names, the systems' shown names and the baseline."""

from __future__ import annotations

import dataclasses
import re
from string import ascii_lowercase
from typing import TYPE_CHECKING

from mtrbench.formats.qrels import read_qrels
from mtrbench.infra.errors import MtrbenchError
from mtrbench.infra.numeric import ascii_digits
from mtrbench.results.result import Result

if TYPE_CHECKING:
    from mtrbench.analyses.compare_many import SystemScores
    from mtrbench.results.compare import RunJudgments


@dataclasses.dataclass(frozen=True)
class JudgmentSource:
    """Where the qrels for TREC runs come from (``--qrels`` or ``--task``/``--split``) and the grade asked for."""

    qrels: str | None = None
    task: str | None = None
    split: str | None = None
    relevance_level: int | None = None


def run_judgments(systems: list[str], source: JudgmentSource, measure_strings: list[str] | None) -> RunJudgments | None:
    """Qrels and measures for systems given as TREC runs; None when every system is a JSON result."""
    from mtrbench.measures import parse_measures  # deferred: loads pytrec_eval
    from mtrbench.results.compare import RunJudgments  # deferred: loads numpy

    measures = parse_measures(measure_strings or ["nDCG@10"], [])
    runs = [s for s in systems if not s.lower().endswith(".json")]
    if not (source.qrels or source.task):
        if source.relevance_level is not None:
            raise MtrbenchError("--relevance-level applies to TREC runs scored with --qrels or --task")
        if runs:
            raise MtrbenchError(f"{runs[0]} is a TREC run (not a .json result): give --qrels FILE or --task NAME")
        return None
    if source.task:
        from mtrbench.data import load_task, resolve_card  # deferred: loads the task loaders

        card = resolve_card(source.task)
        task = load_task(card, split=source.split, require_corpus=False)
        qrels, level = task.qrels(), card.relevance_level
        conversations = {q.qid: q.conversation_id for q in task.queries}
    else:
        assert source.qrels is not None  # checked above: --qrels or --task
        qrels, level, conversations = read_qrels(source.qrels), 1, {}
    level = level if source.relevance_level is None else source.relevance_level
    return RunJudgments(qrels, level, measures, conversations)


def measure_keys(
    measure_strings: list[str] | None, first: str, judgments: RunJudgments | None
) -> tuple[list[str], dict[str, str]]:
    """Per-query keys of the measures asked for, and their printed names (none asked: the judgments' measures,
    else the first result's main score)."""
    from mtrbench.measures import label, parse_measures  # deferred: loads pytrec_eval

    level = judgments.relevance_level if judgments is not None else 1
    if measure_strings is None:
        if judgments is not None:
            measures = judgments.measures
        else:
            key = Result.load(first).main_score_key
            return [key], {key: label(key)}
    else:
        measures = parse_measures(measure_strings, [])
    keys = [m.key(level) for m in measures]
    return keys, {k: str(m) for k, m in zip(keys, measures)}


def named(systems: list[SystemScores], names: list[str] | None) -> list[SystemScores]:
    """``names``, else each system's own name; for results of one model, the history alone."""
    if names is not None:
        return [dataclasses.replace(s, name=n) for s, n in zip(systems, names)]
    found = [re.fullmatch(r"(.*) \((.*)\)", s.name) for s in systems]
    parts = [p for p in found if p is not None]
    if (
        len(parts) == len(systems)
        and len({p.group(1) for p in parts}) == 1
        and len({p.group(2) for p in parts}) == len(parts)
    ):
        return [dataclasses.replace(s, name=p.group(2)) for s, p in zip(systems, parts)]
    return systems


def baseline_index(choice: str | None, systems: list[SystemScores]) -> int:
    """The baseline's position: a system's name, its position (1-based) or its letter; the first by default."""
    if choice is None:
        return 0
    names = [s.name for s in systems]
    if choice in names:
        return names.index(choice)
    if ascii_digits(choice) and 1 <= int(choice) <= len(systems):
        return int(choice) - 1
    if len(choice) == 1 and choice in ascii_lowercase[: len(systems)]:
        return ascii_lowercase.index(choice)
    raise MtrbenchError(
        f"--baseline {choice}: not a system's letter (a-{ascii_lowercase[len(systems) - 1]}), "
        f"position (1-{len(systems)}) or name ({', '.join(names)})"
    )


__all__ = ["JudgmentSource", "baseline_index", "measure_keys", "named", "run_judgments"]
