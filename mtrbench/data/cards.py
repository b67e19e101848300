"""Declarative task cards (one YAML file per task in ``tasks/``), in the spirit of mteb's TaskMetadata."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from mtrbench.infra import plugins
from mtrbench.infra.errors import DataError, MtrbenchError, unknown_name

DEFAULT_K_VALUES = (1, 3, 5, 10, 20, 100)
DEFAULT_METRICS = ("ndcg", "recall", "mrr", "map", "precision", "hit")
# What a card may ask its user to bring (``user_supplies``): data that cannot ship with mtrbench (NIST's qrels,
# a licensed passage collection), given with --data-dir or --corpus.
USER_SUPPLIED = ("topics", "qrels", "corpus")


@dataclass(frozen=True)
class Source:
    """Where the data lives: a Hub dataset (pinned revision) and/or a local folder."""

    hub: str | None = None
    revision: str | None = None
    path: str | None = None  # local folder; relative paths are relative to the card's folder

    def __post_init__(self) -> None:
        if not self.hub and not self.path:
            raise ValueError("source needs 'hub' or 'path'")


@dataclass(frozen=True)
class TaskCard:
    name: str
    description: str
    format: str
    source: Source
    splits: tuple[str, ...]
    eval_split: str
    main_score: str = "ndcg_at_10"
    metrics: tuple[str, ...] = DEFAULT_METRICS
    k_values: tuple[int, ...] = DEFAULT_K_VALUES
    relevance_level: int = 1  # minimum grade that binary measures count as relevant (TREC CAsT: 2)
    type: str = "conversational-retrieval"
    languages: tuple[str, ...] = ("eng",)
    domains: tuple[str, ...] = ()
    reference: str | None = None
    license: str | None = None
    citation: str | None = None
    loader_options: dict[str, Any] = field(default_factory=dict)
    official_protocol: str | None = None  # the benchmark's own evaluation conventions (docs/protocols.md)
    protocol: str = "trec_eval"  # the default of --protocol: trec_eval or official
    user_supplies: tuple[str, ...] = ()  # of USER_SUPPLIED: what the user brings (not redistributable)
    card_path: str | None = None  # filled in on load, not written by authors
    origin: str = "built-in"  # plugins.BUILT_IN, or the plugin distribution that registered it ("name version")
    # the task description instruction-tuned embedders get on this task (serialize/instructions.py); None: the default
    instruction: str | None = None

    def local_path(self) -> Path | None:
        if not self.source.path:
            return None
        path = Path(self.source.path).expanduser()
        if not path.is_absolute() and self.card_path:
            path = Path(self.card_path).parent / path
        return path

    def runs_offline(self) -> bool:
        """Everything the card needs is on this machine: its local folder exists and it asks the user to bring
        nothing (iKAT and CAsT 2022 ship their topics, but NIST's qrels and the passage collection come from the
        user). Hub datasets count as online even when cached, since a cache is not something a card can promise."""
        path = self.local_path()
        return path is not None and path.exists() and not self.user_supplies

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("card_path")
        data.pop("origin")
        if data["instruction"] is None:  # cards without one read as they did before the field existed
            data.pop("instruction")
        return data


_NOT_WRITTEN = {"card_path", "origin"}  # set by mtrbench, never by a card's author
_TUPLE_FIELDS = {"splits", "metrics", "k_values", "languages", "domains", "user_supplies"}


def card_from_dict(data: dict[str, Any], origin: str) -> TaskCard:
    known = {f.name for f in fields(TaskCard)} - _NOT_WRITTEN
    unknown = set(data) - known
    if unknown:
        raise MtrbenchError(f"{origin}: unknown task card field(s) {sorted(unknown)}; allowed: {sorted(known)}")
    missing = {"name", "description", "format", "source", "splits", "eval_split"} - set(data)
    if missing:
        raise MtrbenchError(f"{origin}: task card lacks required field(s) {sorted(missing)}")
    values = dict(data)
    try:
        values["source"] = Source(**values["source"])
    except (TypeError, ValueError) as exc:
        raise MtrbenchError(f"{origin}: bad 'source': {exc}") from None
    for key in _TUPLE_FIELDS & set(values):
        values[key] = tuple(values[key])
    card = TaskCard(**values, card_path=origin)
    _check_protocol(card, origin)
    unknown_supplies = [item for item in card.user_supplies if item not in USER_SUPPLIED]
    if unknown_supplies:
        raise MtrbenchError(f"{origin}: user_supplies {unknown_supplies} not among {list(USER_SUPPLIED)}")
    if card.eval_split not in card.splits:
        raise MtrbenchError(f"{origin}: eval_split '{card.eval_split}' is not one of splits {list(card.splits)}")
    return card


def _check_protocol(card: TaskCard, origin: str) -> None:
    from mtrbench.measures.protocols import CHOICES, OFFICIAL, OFFICIAL_NAMES  # deferred: loads pytrec_eval

    if card.official_protocol is not None and card.official_protocol not in OFFICIAL_NAMES:
        raise MtrbenchError(
            f"{origin}: official_protocol '{card.official_protocol}' is not one of {list(OFFICIAL_NAMES)}"
        )
    if card.protocol not in CHOICES:
        raise MtrbenchError(f"{origin}: protocol '{card.protocol}' is not one of {list(CHOICES)}")
    if card.protocol == OFFICIAL and card.official_protocol is None:
        raise MtrbenchError(f"{origin}: protocol 'official' needs an official_protocol")


def _yaml_where(path: Path, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    return f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """The problem in one line (PyYAML's message spans several: context, snippet and a caret)."""
    problem = getattr(exc, "problem", None) or str(exc)
    if "python/" in problem and "constructor" in problem:
        problem += "; a task card takes plain YAML, no !!python tags"
    return " ".join(problem.split())


def load_card(path: Path) -> TaskCard:
    # one eval resolves its task several times (plan, resume check, load), each parsing every card: a card is
    # parsed again only when its file changed
    stat = path.stat()
    return _parsed_card(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=512)
def _parsed_card(location: str, mtime_ns: int, size: int) -> TaskCard:
    path = Path(location)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start + 1}: {exc.reason})") from None
    except yaml.YAMLError as exc:
        raise DataError(f"{_yaml_where(path, exc)}: not valid YAML ({_yaml_problem(exc)})") from None
    if not isinstance(data, dict):
        raise MtrbenchError(f"{path}: a task card must be a YAML mapping")
    return card_from_dict(data, str(path))


def cards_dir() -> Path:
    return Path(str(resources.files("mtrbench.tasks")))


def builtin_cards() -> dict[str, TaskCard]:
    cards: dict[str, TaskCard] = {}
    for path in sorted(cards_dir().glob("*.yaml")):
        card = load_card(path)
        if card.name in cards:
            raise MtrbenchError(f"{path}: task name '{card.name}' already defined by {cards[card.name].card_path}")
        cards[card.name] = card
    return cards


def all_cards() -> dict[str, TaskCard]:
    """The built-in cards, then those plugins register (``mtrbench.tasks`` entry points, mtrbench.infra.plugins)."""
    cards = builtin_cards()
    for card in plugin_cards(frozenset(cards)):
        cards[card.name] = card
    return cards


@cache
def plugin_cards(builtin: frozenset[str]) -> tuple[TaskCard, ...]:
    """The cards of the ``mtrbench.tasks`` entry points whose names are not in ``builtin`` nor taken by an
    earlier plugin, each validated as a built-in card is; a card that fails is a warning and is skipped."""
    candidates: list[plugins.Candidate[TaskCard]] = []
    for entry in plugins.entries(plugins.TASKS):
        for card in _entry_cards(entry):
            candidates.append(plugins.Candidate((card.name,), card.name, replace(card, origin=entry.origin), entry))
    return tuple(c.item for c in plugins.merge("task", builtin, candidates))


def _entry_cards(entry: plugins.Entry) -> list[TaskCard]:
    cards: list[TaskCard] = []
    for item in entry.items:
        try:
            if isinstance(item, TaskCard):
                # validated like a YAML card; a relative data path is relative to the card's file, else the module's
                where = item.card_path or str(entry.module_file or f"plugin {entry.name}")
                cards.append(card_from_dict(item.to_dict(), where))
            elif isinstance(item, (str, os.PathLike)):
                path = Path(item).expanduser()
                if not path.is_absolute() and entry.module_file is not None:
                    path = entry.module_file.parent / path
                if path.is_dir():
                    files = sorted(path.glob("*.yaml"))
                    if not files:
                        entry.warn(f"{path}: no task card (*.yaml) in this folder")
                elif path.is_file():
                    files = [path]
                else:
                    raise MtrbenchError(f"{path}: no such task card file or folder")
                for file in files:
                    try:
                        cards.append(load_card(file))
                    except MtrbenchError as exc:
                        entry.warn(f"{exc}; skipped")
            else:
                raise MtrbenchError(f"{type(item).__name__} {item!r:.60} is not a task card file, folder or TaskCard")
        except MtrbenchError as exc:
            entry.warn(f"{exc}; skipped")
    return cards


def get_card(name: str) -> TaskCard:
    cards = all_cards()
    if name in cards:
        return cards[name]
    raise unknown_name("task", name, cards, hint="`mtrbench tasks` lists them; a folder path also works.")
