"""One evaluated (model, task, history) result: the typed view every reader of ``eval``'s JSON goes through.

On disk a result stays exactly mteb's ``TaskResult`` document plus the ``mtrbench`` block (see
``results/writer.py``); :class:`Result` wraps that document without changing it, so files written by
any earlier mtrbench load, and ``save`` writes back byte-for-byte what ``eval`` writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard, all_cards
from mtrbench.formats.run import Run, read_run
from mtrbench.infra.errors import DataError, MtrbenchError
from mtrbench.infra.numeric import json_text
from mtrbench.results.documents import kind_of, read_json, read_per_query_rows
from mtrbench.results.partial_corpus import PartialCorpus
from mtrbench.results.settings import ResultSettings
from mtrbench.results.writer import ResultPaths, write_result

# Keys of a split's score block that are not metrics (mteb's own bookkeeping).
NOT_METRICS = frozenset({"hf_subset", "languages", "main_score"})
# In the ``mtrbench`` block: where a task given as a path (a data folder, a card file) was, absolute.
TASK_PATH = "task_path"


def task_location(card: TaskCard) -> dict[str, str]:
    """``{"task_path": ABSOLUTE}`` for a task given as a path (a data folder or a card file that is not the
    registered card of its name), so that a reader (``explore``) finds it again from any folder; ``{}`` for a
    registered task, whose name finds it (its results stay byte-identical to those written before)."""
    registered = all_cards().get(card.name)
    if card.card_path is None or (registered is not None and registered.card_path == card.card_path):
        return {}
    return {TASK_PATH: str(Path(card.card_path).expanduser().resolve())}


@dataclass(frozen=True)
class QueryScores:
    """One evaluated query's metric values (a row of ``<task>.per_query.jsonl``)."""

    qid: str
    conversation_id: str | None
    turn_id: int | None
    values: dict[str, float]

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> QueryScores:
        values = {
            k: float(v)
            for k, v in row.items()
            if k not in ("qid", "conversation_id", "turn_id")
            and isinstance(v, (int, float))
            and not isinstance(v, bool)
        }
        return cls(str(row["qid"]), row.get("conversation_id"), row.get("turn_id"), values)

    def as_row(self) -> dict[str, Any]:
        return {"qid": self.qid, "conversation_id": self.conversation_id, "turn_id": self.turn_id, **self.values}


@dataclass
class Result:
    """``document`` is the JSON as written; ``path`` where it lies (None before it is saved).

    ``per_query`` rows are read lazily from the file named in the document, beside ``path``; a result made in
    this process carries them already.
    """

    document: dict[str, Any]
    path: Path | None = None
    _per_query: list[QueryScores] | None = field(default=None, repr=False)

    # -- reading ---------------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path) -> Result:
        """A result file written by ``mtrbench eval`` (any version); one ``error:`` line when it is not one."""
        path = Path(path)
        return cls.from_document(read_json(path), path)

    @classmethod
    def from_document(cls, document: object, path: str | Path | None = None) -> Result:
        """An already-read document, checked as :meth:`load` checks a file (errors name ``path``)."""
        where = path if path is not None else "result"
        if not isinstance(document, dict) or kind_of(document) != "result":
            raise DataError(f"{where}: not an `mtrbench eval` result")
        result = cls(document, None if path is None else Path(path))
        try:
            result.split_block  # noqa: B018 - validates the layout once, here
            if not isinstance(result.meta.get("model"), dict) or not isinstance(result.settings, dict):
                raise TypeError("mtrbench.model and mtrbench.settings must be objects")
        except (KeyError, IndexError, TypeError, StopIteration, AttributeError) as exc:
            raise DataError(f"{where}: incomplete mtrbench result ({type(exc).__name__}: {exc})") from None
        return result

    @property
    def meta(self) -> dict[str, Any]:
        """The ``mtrbench`` block."""
        return self.document["mtrbench"]

    @property
    def settings(self) -> dict[str, Any]:
        return self.meta.get("settings") or {}

    @property
    def result_settings(self) -> ResultSettings:
        """The settings block typed, with what makes two results the same (:meth:`ResultSettings.identity`)."""
        return ResultSettings.from_json(self.settings)

    @property
    def has_settings(self) -> bool:
        """Whether the file records a settings block at all (a file cut short or hand-made may not)."""
        return isinstance(self.meta.get("settings"), dict)

    @property
    def task_name(self) -> str:
        return self.document["task_name"]

    @property
    def task_path(self) -> str | None:
        """Where the task was, for a task given as a path (absolute; None for a registered task or an older file)."""
        recorded = self.meta.get(TASK_PATH)
        return recorded if isinstance(recorded, str) and recorded else None

    @property
    def split(self) -> str:
        return self.settings.get("split") or next(iter(self.document["scores"]))

    @property
    def split_block(self) -> dict[str, Any]:
        return self.document["scores"][self.split][0]

    @property
    def scores(self) -> dict[str, float]:
        """Every metric of the evaluated split (mteb's bookkeeping keys left out)."""
        return {
            k: float(v)
            for k, v in self.split_block.items()
            if k not in NOT_METRICS and isinstance(v, (int, float)) and not isinstance(v, bool)
        }

    @property
    def dataset_revision(self) -> str | None:
        return self.document.get("dataset_revision")

    @property
    def evaluation_time(self) -> float | None:
        return self.document.get("evaluation_time")

    @property
    def main_score_key(self) -> str:
        """Recorded since the typed results; for older files, the task card's main score, else the metric whose
        value equals ``main_score``."""
        recorded = self.meta.get("main_score_key")
        if isinstance(recorded, str):
            return recorded
        try:
            return main_score_key(self.task_name, self.split_block, self.scores)
        except DataError as exc:
            if self.path is None:
                raise
            raise DataError(f"{self.path}: {exc}") from None

    @property
    def main_score(self) -> float:
        return self.scores[self.main_score_key]

    @property
    def history(self) -> str | None:
        return self.settings.get("history")

    @property
    def model_name(self) -> str:
        return self.meta["model"]["name"]

    @property
    def model_revision(self) -> str | None:
        return self.meta["model"].get("revision")

    @property
    def requested_model(self) -> str:
        return self.meta["model"].get("requested") or self.model_name

    @property
    def model_info(self) -> dict[str, Any]:
        """The whole ``model`` block (name, revision, requested alias, and whatever else eval recorded)."""
        return dict(self.meta["model"])

    @property
    def mtrbench_version(self) -> str | None:
        """The mtrbench version that wrote the file."""
        return self.meta.get("version")

    @property
    def date(self) -> str | None:
        """When the run was made (ISO date, as recorded by mtrbench; mteb's ``date`` is a timestamp)."""
        return self.meta.get("date")

    @property
    def hardware(self) -> dict[str, Any] | None:
        return self.meta.get("hardware")

    @property
    def command(self) -> str | None:
        """The ``mtrbench eval`` command line as recorded."""
        return self.meta.get("command")

    @property
    def timings(self) -> dict[str, float]:
        """Stage -> seconds (``timings_s``); empty when not recorded."""
        return dict(self.meta.get("timings_s") or {})

    @property
    def experiment(self) -> str | None:
        return self.meta.get("experiment")

    @property
    def breakdowns(self) -> dict[str, Any]:
        return self.meta.get("breakdowns") or {}

    @property
    def truncation(self) -> dict[str, Any]:
        return self.meta.get("truncation") or {}

    @property
    def warnings(self) -> dict[str, int]:
        return dict(self.meta.get("warnings") or {})

    @property
    def n_evaluated(self) -> int:
        return int((self.meta.get("queries") or {}).get("evaluated", 0))

    @property
    def n_excluded(self) -> int:
        return int((self.meta.get("queries") or {}).get("excluded_without_positives", 0))

    @property
    def partial_corpus(self) -> PartialCorpus | None:
        """Judged passages the corpus lacked when this result was scored; None for a full corpus."""
        return PartialCorpus.from_result(self.meta)

    def analyses(self, names: tuple[str, ...] = ("refined_qrels", "ragalign")) -> dict[str, Any]:
        """The analyses recorded beside the scores (only those present)."""
        return {name: self.meta[name] for name in names if name in self.meta}

    @property
    def files(self) -> dict[str, str]:
        """Kind (``run``, ``per_query``) -> the file name recorded beside the result, as written."""
        files = self.meta.get("files")
        return dict(files) if isinstance(files, dict) else {}

    def _beside(self, kind: str) -> Path:
        """A file recorded in ``files`` (a plain name), next to the result."""
        name = self.files.get(kind)
        if self.path is None:
            raise DataError(f"this {self.task_name} result has not been saved: no {kind} file beside it")
        if not isinstance(name, str) or not name or Path(name).name != name or name in (".", ".."):
            raise DataError(f"{self.path}: no {kind} file recorded beside it")
        return Path(self.path).with_name(name)

    @property
    def run_path(self) -> Path:
        return self._beside("run")

    @property
    def per_query_path(self) -> Path:
        return self._beside("per_query")

    def run(self) -> Run:
        return read_run(self.run_path)

    @property
    def per_query(self) -> list[QueryScores]:
        if self._per_query is None:
            if self.path is None:
                raise DataError(f"this {self.task_name} result has not been saved: no per-query file beside it")
            rows = read_per_query_rows(self.path, self.document)
            try:
                self._per_query = [QueryScores.from_row(row) for row in rows]
            except KeyError:
                raise DataError(f"{self.per_query_path}: a row without a qid") from None
        return self._per_query

    def per_query_values(self) -> dict[str, dict[str, float]]:
        """qid -> metric -> value, as pytrec_eval's per-query dict."""
        return {row.qid: row.values for row in self.per_query}

    # -- writing ---------------------------------------------------------------------------------------
    def save(self, run: Run, run_tag: str, path: Path | None = None) -> None:
        """The JSON, its TREC run and per-query file, each written atomically; the file names recorded in the
        document (``files``) are the ones written."""
        path = Path(path or self.path or "")
        if not path.name:
            raise DataError("a result needs a path to be saved")
        if self._per_query is None and self.path is not None and Path(self.path).is_file():
            self.per_query  # noqa: B018 - read the rows from where the result lies before it moves
        self.path = path
        paths = ResultPaths(path, self.run_path, self.per_query_path)
        write_result(paths, self.document, run, [row.as_row() for row in self._per_query or []], run_tag=run_tag)

    def to_json(self) -> str:
        return json_text(self.document, path=f"result of {self.model_name} on {self.task_name}", indent=2) + "\n"

    def __repr__(self) -> str:
        try:
            score = f"{self.main_score_key}={self.main_score:.4f}"
        except (KeyError, TypeError):
            score = "no main score"
        return f"Result({self.task_name}, {self.model_name}, history={self.history}, {score})"


def main_score_key(task: str, block: dict[str, Any], scores: dict[str, float]) -> str:
    """mteb stores the main score's value, not its name: take the task card's, else the metric with that value."""
    value = block.get("main_score")
    try:
        card = all_cards().get(task)
    except MtrbenchError:
        card = None
    if card is not None and card.main_score in scores:
        return card.main_score
    matching = [k for k, v in scores.items() if v == value]
    if not matching:
        raise DataError(f"main_score {value!r} matches none of the metrics")
    return "ndcg_at_10" if "ndcg_at_10" in matching else matching[0]
