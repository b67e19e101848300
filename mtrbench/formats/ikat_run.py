"""TREC iKAT run files: read, written and checked as the organisers' validators check them.

2023 and 2024 (``run_validation/`` of github.com/irlabamsterdam/iKAT): one JSON object
``{"run_name", "run_type", "turns": [{"turn_id", "responses": [{"rank", "text", "passage_provenance": [{"id",
"text", "score", "used"}], "ptkb_provenance": [...]}]}]}``; 2023's ``ptkb_provenance`` holds ``{"id", "text",
"score"}`` objects, 2024's the statement ids alone.

2025 (``2025/scripts/validate_trec_ikat25.py``): JSON lines, one turn each: ``{"metadata": {"team_id", "run_id",
"run_type"}, "turn_id", "references": {passage id: score}, "responses": [{"text", "citations": {passage id: score},
"ptkb_provenance": [...]}]}``.

A turn's passage ranking: 2023/2024, its responses' ``passage_provenance`` in response order (a passage listed twice
keeps its first score); 2025, its ``references``. Its PTKB ranking: ``ptkb_provenance`` of the responses (an
object's score, else descending by position). A turn listed twice keeps its first entry too; each repeat (a turn, a
passage within one response's provenance or one turn's references) is a warning of the checks. The structural checks
are the validators' (re-implemented): errors stop a submission, warnings do not.

A score that is not a finite number (JSON's ``NaN``, ``Infinity``) is one error naming the file and record, as
``score --run`` refuses it; so is a run of one layout scored or checked as the other (``require_year``).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.formats.run import Run
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import DataError
from mtrbench.infra.numeric import finite, json_text

RUN_TYPES = {2023: ("automatic", "manual"), 2024: ("automatic", "manual", "only_response")}
RUN_TYPES_2025 = ("manual", "automatic", "generation-only")
CLUEWEB_2025 = re.compile(r"^clueweb22-en\d{4}-\d{2}-\d{5}:\d+$")
# ASCII digits: str.isdigit() also takes "²", which int() refuses
DIGITS = re.compile(r"[0-9]+")
MAX_PASSAGES = 1000
USED_PASSAGES = 3  # passages a written response marks as used (its top 3)


@dataclass
class IkatResponse:
    rank: int
    text: str
    passages: list[tuple[str, float, bool]]  # (passage id, score, used), as listed
    ptkb: list[tuple[str, float]]  # (statement id, score), as listed


@dataclass
class IkatTurn:
    turn_id: str
    responses: list[IkatResponse]
    references: list[tuple[str, float]] | None = None  # 2025: the turn's ranked passages
    repeated_references: list[str] = field(default_factory=list)  # 2025: passage ids given again (the first kept)


@dataclass
class IkatRun:
    run_name: str
    run_type: str
    turns: list[IkatTurn]
    year: int  # 2023 / 2024 layout (one JSON) or 2025 (JSON lines)

    def passage_run(self) -> Run:
        return {t.turn_id: _first_scores(_turn_passages(t)) for t in self.first_turns()}

    def ptkb_run(self) -> dict[str, dict[str, float]]:
        return {t.turn_id: _first_scores(p for r in t.responses for p in r.ptkb) for t in self.first_turns()}

    def first_turns(self) -> list[IkatTurn]:
        """Each turn id's first entry: a turn listed again is not scored (as a passage listed again in a ranking)."""
        first: dict[str, IkatTurn] = {}
        for turn in self.turns:
            first.setdefault(turn.turn_id, turn)
        return list(first.values())

    def repeats(self) -> list[str]:
        """One warning per repeated entry, the first of which is kept: a turn id listed again, a passage listed
        again within one response's ``passage_provenance`` (2023/2024) or one turn's ``references`` (2025). A
        passage that several responses of a turn cite is no repeat."""
        out = []
        seen: dict[str, int] = {}
        for n, turn in enumerate(self.turns):
            if turn.turn_id in seen:
                out.append(f"turn {n}: turn id {turn.turn_id} listed again (turn {seen[turn.turn_id]} is scored)")
            seen.setdefault(turn.turn_id, n)
            out += [
                f"turn {turn.turn_id}: reference {doc} listed again (the first kept)"
                for doc in turn.repeated_references
            ]
            for i, response in enumerate(turn.responses):
                listed: set[str] = set()
                for doc, _, _ in response.passages:
                    if doc in listed:
                        out.append(f"turn {turn.turn_id} response {i}: passage {doc} listed again (the first kept)")
                    listed.add(doc)
        return out


def _turn_passages(turn: IkatTurn) -> Iterable[tuple[str, float]]:
    if turn.references is not None:
        return turn.references
    return ((doc, score) for r in turn.responses for doc, score, _ in r.passages)


def _first_scores(items: Iterable[tuple[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for doc, score in items:
        out.setdefault(doc, score)
    return out


# ------------------------------------------------------------------------------------------ reading


def read_ikat_run(path: Path) -> IkatRun:
    """A 2023/2024 JSON run or a 2025 JSON-lines run; a malformed file is one error naming the file and record."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot be read as UTF-8 text ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return _read_jsonl(path, text)
    if isinstance(data, dict) and "turns" in data:
        return _read_json(path, data)
    if isinstance(data, dict) and "references" in data:
        return _read_jsonl(path, text)
    raise DataError(f"{path}: not an iKAT run (a JSON object with 'run_name', 'run_type' and 'turns')")


def _read_json(path: Path, data: dict[str, Any]) -> IkatRun:
    for key in ("run_name", "run_type"):
        if not isinstance(data.get(key), str):
            raise DataError(f"{path}: the run needs a string '{key}'")
    if not isinstance(data["turns"], list):
        raise DataError(f"{path}: 'turns' must be a list")
    turns = []
    year = 2023
    for n, raw in enumerate(data["turns"]):
        where = f"{path} turn {n}"
        if not isinstance(raw, dict) or not isinstance(raw.get("turn_id"), str):
            raise DataError(f"{where}: a turn needs a string 'turn_id'")
        responses = raw.get("responses")
        if not isinstance(responses, list):
            raise DataError(f"{where} ({raw['turn_id']}): 'responses' must be a list")
        parsed = [_response(r, f"{where} ({raw['turn_id']}) response {i}") for i, r in enumerate(responses)]
        if any(isinstance(p, int) for r in responses if isinstance(r, dict) for p in r.get("ptkb_provenance") or []):
            year = 2024
        turns.append(IkatTurn(raw["turn_id"], parsed))
    return IkatRun(data["run_name"], data["run_type"], turns, year)


def _response(raw: Any, where: str) -> IkatResponse:
    if not isinstance(raw, dict):
        raise DataError(f"{where}: a response must be an object")
    rank = raw.get("rank", 0)
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise DataError(f"{where}: 'rank' must be an integer")
    passages = []
    for i, p in enumerate(raw.get("passage_provenance") or []):
        if not isinstance(p, dict) or not isinstance(p.get("id"), str) or not _is_number(p.get("score", 0.0)):
            raise DataError(f"{where}: passage_provenance {i} needs a string 'id' and a numeric 'score'")
        score = finite(p.get("score", 0.0), f"{where} passage_provenance {i} ({p['id']})", "score")
        passages.append((p["id"], score, bool(p.get("used", False))))
    return IkatResponse(rank, str(raw.get("text") or ""), passages, _ptkb(raw.get("ptkb_provenance") or [], where))


def _ptkb(raw: list[Any], where: str) -> list[tuple[str, float]]:
    """Statement ids with scores: an object's own score, else descending by position."""
    out = []
    for i, item in enumerate(raw):
        if isinstance(item, dict) and item.get("id") is not None and _is_number(item.get("score", 0.0)):
            out.append((str(item["id"]), finite(item.get("score", 0.0), f"{where} ptkb_provenance {i}", "score")))
        elif isinstance(item, (int, str)) and not isinstance(item, bool):
            out.append((str(item), float(len(raw) - i)))
        else:
            raise DataError(f"{where}: ptkb_provenance {i} must be a statement id or an object with 'id' and 'score'")
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _FirstKeys(dict):
    """A JSON object whose repeated keys keep their first value (Python's json keeps the last), the repeats noted."""

    repeated: list[str]


def _first_keys(pairs: list[tuple[str, Any]]) -> _FirstKeys:
    out = _FirstKeys()
    out.repeated = []
    for key, value in pairs:
        if key in out:
            out.repeated.append(key)
        else:
            out[key] = value
    return out


def _read_jsonl(path: Path, text: str) -> IkatRun:
    turns: list[IkatTurn] = []
    name = kind = ""
    for n, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            entry = json.loads(line, object_pairs_hook=_first_keys)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path} record {n}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        where = f"{path} record {n}"
        if not isinstance(entry, dict) or not isinstance(entry.get("turn_id"), str):
            raise DataError(f"{where}: a 2025 run line needs a string 'turn_id'")
        raw_meta = entry.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        name, kind = str(meta.get("run_id", name)), str(meta.get("run_type", kind))
        where = f"{where} ({entry['turn_id']})"
        references = entry.get("references")
        if not isinstance(references, dict) or not all(_is_number(s) for s in references.values()):
            raise DataError(f"{where}: 'references' must map passage ids to scores")
        scores = {str(d): finite(s, f"{where} reference {d}", "score") for d, s in references.items()}
        ranked = sorted(scores.items(), key=lambda item: -item[1])
        responses = []
        for i, r in enumerate(entry.get("responses") or []):
            if not isinstance(r, dict):
                raise DataError(f"{where} response {i}: a response must be an object")
            raw_cited = r.get("citations")
            cited: dict[str, Any] = raw_cited if isinstance(raw_cited, dict) else {}
            used = [
                (str(d), finite(s, f"{where} response {i} citation {d}", "score"), True)
                for d, s in cited.items()
                if _is_number(s)
            ]
            responses.append(
                IkatResponse(i + 1, str(r.get("text") or ""), used, _ptkb(r.get("ptkb_provenance") or [], where))
            )
        repeated = list(getattr(references, "repeated", []))
        turns.append(IkatTurn(entry["turn_id"], responses, ranked, repeated))
    return IkatRun(name, kind, turns, 2025)


def require_year(run: IkatRun, year: int, path: Path, task: str) -> None:
    """A run of the layout of ``task``'s year (2025: JSON lines; 2023/2024: one JSON object): a run of the other
    layout would be read with the other year's fields and checked against rules it was never written for."""
    if (run.year == 2025) == (year == 2025):
        return
    layouts = {True: "the 2025 layout (JSON lines, one turn a line)", False: "the 2023/2024 layout (one JSON object)"}
    raise DataError(
        f"{path}: an iKAT run in {layouts[run.year == 2025]}, but task {task} is iKAT {year}, whose runs are in "
        f"{layouts[year == 2025]}: score it on a task of its own year"
    )


# ------------------------------------------------------------------------------------------ writing


@dataclass(frozen=True)
class TurnOutput:
    """What one turn of a written run holds: its ranked passages, response and personal statements."""

    turn_id: str
    passages: list[tuple[str, float]]  # best first
    response: str = ""
    statements: list[tuple[str, str, float]] = field(default_factory=list)  # (id, text, score), best first
    used: tuple[str, ...] = ()  # the passages the response drew on (shown to the generator); none: the top 3

    def used_ids(self) -> set[str]:
        return set(self.used) if self.used else {doc for doc, _ in self.passages[:USED_PASSAGES]}


def ranked_passages(scores: Mapping[str, float], depth: int = MAX_PASSAGES) -> list[tuple[str, float]]:
    """trec_eval's order: score descending, then passage id descending."""
    return sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)[:depth]


def ikat_document(
    turns: list[TurnOutput], year: int, run_name: str, run_type: str, passage_text: Mapping[str, str]
) -> str:
    """The run file's text: one JSON object (2023, 2024) or JSON lines (2025)."""
    if year == 2025:
        lines = []
        for t in turns:
            used_ids = t.used_ids()
            used = {doc: score for doc, score in t.passages if doc in used_ids}
            entry = {
                "metadata": {"team_id": run_name, "run_id": run_name, "run_type": run_type},
                "turn_id": t.turn_id,
                "references": dict(t.passages),
                "responses": [
                    {"text": t.response, "citations": used, "ptkb_provenance": [s for s, _, _ in t.statements]}
                ],
            }
            lines.append(json_text(entry, path=f"iKAT run {run_name}, turn {t.turn_id}", ensure_ascii=False))
        return "\n".join(lines) + "\n"
    out = []
    for t in turns:
        used_ids = t.used_ids()
        response: dict[str, Any] = {
            "rank": 1,
            "text": t.response,
            "passage_provenance": [
                {"id": doc, "text": passage_text.get(doc, ""), "score": score, "used": doc in used_ids}
                for doc, score in t.passages
            ],
            "ptkb_provenance": [
                {"id": sid, "text": text, "score": score}
                if year == 2023
                else int(sid)
                if DIGITS.fullmatch(sid)
                else sid
                for sid, text, score in t.statements
            ],
        }
        out.append({"turn_id": t.turn_id, "responses": [response]})
    document = {"run_name": run_name, "run_type": run_type, "turns": out}
    return json_text(document, path=f"iKAT run {run_name}", indent=1, ensure_ascii=False) + "\n"


def write_ikat_run(path: Path, document: str) -> None:
    atomic_write_text(path, document)


# ------------------------------------------------------------------------------------------ checking


@dataclass
class RunChecks:
    """The validators' findings: errors stop a submission, warnings do not."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.errors


@dataclass(frozen=True)
class TopicTurns:
    """What the checks need of the topics: each topic's turn ids and statement ids."""

    turns: dict[str, list[str]]  # topic number -> its turn ids (``<topic>_<turn>``), in order
    statements: dict[str, list[str]]  # topic number -> its PTKB statement ids


def check_run(run: IkatRun, topics: TopicTurns, year: int, passage_db: Path | None = None) -> RunChecks:
    checks = RunChecks(warnings=run.repeats())
    if year == 2025:
        _check_2025(run, topics, checks)
    else:
        _check_run_fields(run, year, checks)
        _check_turn_counts(run, topics, checks)
        for turn in run.turns:
            _check_turn(run, turn, topics, year, checks)
    if passage_db is not None:
        _check_passage_ids(run, passage_db, checks)
    return checks


def _check_run_fields(run: IkatRun, year: int, checks: RunChecks) -> None:
    if not run.run_name:
        checks.warnings.append("the run has an empty run_name")
    if run.run_type not in RUN_TYPES[2024 if year >= 2024 else 2023]:
        checks.warnings.append(f"run_type '{run.run_type}' is not one of {list(RUN_TYPES[min(year, 2024)])}")
    if not run.turns:
        checks.errors.append("the run has no turns")


def _check_turn_counts(run: IkatRun, topics: TopicTurns, checks: RunChecks) -> None:
    expected = sum(len(t) for t in topics.turns.values())
    if len(run.turns) != expected:
        checks.errors.append(f"the run has {len(run.turns)} turns, the topics {expected}")
    per_topic: dict[str, int] = {}
    for turn in run.turns:
        topic, sep, number = turn.turn_id.rpartition("_")
        if not sep or not DIGITS.fullmatch(number):
            checks.errors.append(f"turn id '{turn.turn_id}' is not <topic>_<turn>")
            continue
        per_topic[topic] = per_topic.get(topic, 0) + 1
    for topic, turns in topics.turns.items():
        if per_topic.get(topic, 0) != len(turns):
            checks.errors.append(
                f"topic {topic} has {per_topic.get(topic, 0)} turns in the run, {len(turns)} in the topics"
            )


def _check_turn(run: IkatRun, turn: IkatTurn, topics: TopicTurns, year: int, checks: RunChecks) -> None:
    topic = turn.turn_id.rpartition("_")[0]
    if turn.turn_id not in topics.turns.get(topic, []):
        checks.errors.append(f"turn id '{turn.turn_id}' is no turn of the topics")
        return
    previous_rank = 0
    for i, response in enumerate(turn.responses):
        where = f"turn {turn.turn_id} response {i}"
        if response.rank < 1 or response.rank <= previous_rank:
            checks.warnings.append(f"{where}: rank {response.rank} is not above the previous ({previous_rank})")
        previous_rank = response.rank
        if not response.text and run.run_type != "only_response":
            checks.warnings.append(f"{where}: no response text")
        _check_passages(response, where, checks)
        statements = set(topics.statements.get(topic, []))
        if not response.ptkb:
            checks.warnings.append(f"{where}: no PTKB provenance")
        for sid, _ in response.ptkb:
            if sid not in statements:
                checks.errors.append(f"{where}: PTKB provenance '{sid}' is no statement of topic {topic}")


def _check_passages(response: IkatResponse, where: str, checks: RunChecks) -> None:
    previous = float("inf")
    for doc, score, _ in response.passages:
        if score > previous:
            checks.warnings.append(f"{where}: passage {doc} scores above the one before it ({score} > {previous})")
        previous = score
        if not doc.startswith("clueweb22-"):
            checks.warnings.append(f"{where}: passage id {doc} lacks the 'clueweb22-' prefix")
        if doc.count(":") != 1:
            checks.warnings.append(f"{where}: passage id {doc} needs exactly one ':'")
    if not response.passages:
        checks.warnings.append(f"{where}: no passage provenance")
    elif len(response.passages) > MAX_PASSAGES:
        checks.warnings.append(f"{where}: {len(response.passages)} passages (over {MAX_PASSAGES})")
    if response.passages and not any(used for _, _, used in response.passages):
        checks.warnings.append(f"{where}: no passage marked as used (the top 5 will count as provenance)")


def _check_2025(run: IkatRun, topics: TopicTurns, checks: RunChecks) -> None:
    if run.run_type not in RUN_TYPES_2025:
        checks.errors.append(f"run_type '{run.run_type}' is not one of {list(RUN_TYPES_2025)}")
    known = {tid for turns in topics.turns.values() for tid in turns}
    submitted = {t.turn_id for t in run.turns}
    checks.errors += [f"missing turn id {tid}" for tid in sorted(known - submitted)]
    checks.errors += [f"turn id '{tid}' is no turn of the topics" for tid in sorted(submitted - known)]
    for turn in run.turns:
        references = dict(turn.references or [])
        if len(references) > MAX_PASSAGES:
            checks.warnings.append(f"turn {turn.turn_id}: {len(references)} references (over {MAX_PASSAGES})")
        checks.warnings += [
            f"turn {turn.turn_id}: reference {d} is not a ClueWeb22 passage id"
            for d in references
            if not CLUEWEB_2025.match(d)
        ]
        words = sum(len(r.text.split()) for r in turn.responses)
        if words > 250:
            checks.warnings.append(f"turn {turn.turn_id}: responses of {words} words (over 250)")
        for i, response in enumerate(turn.responses):
            missing = [d for d, _, _ in response.passages if d not in references]
            checks.errors += [
                f"turn {turn.turn_id} response {i}: citation {d} is not among the references" for d in missing
            ]


def _check_passage_ids(run: IkatRun, db: Path, checks: RunChecks) -> None:
    """The organisers' passage-id database (sqlite, table ``passage_ids`` with column ``id``): unknown ids warn."""
    ids = sorted({doc for t in run.turns for doc, _ in _turn_passages(t)})
    try:
        connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            known: set[str] = set()
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                rows = connection.execute(
                    f"SELECT id FROM passage_ids WHERE id IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                known.update(row[0] for row in rows)
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise DataError(f"--passage-db {db}: not the organisers' passage-id database ({exc})") from None
    checks.warnings += [f"passage {doc} is not in the collection" for doc in ids if doc not in known]
