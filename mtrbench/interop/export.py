"""Write any task split as BEIR files or as a Hub-ready Hugging Face dataset folder.

Both formats carry each query twice: ``text``, one string serialized (and truncated) exactly as
``mtrbench eval`` feeds the retriever with the chosen history strategy, so BEIR's and mteb's own
retrievers score the export as mtrbench scores the task; and the conversation itself (history with
roles, question, gold rewrite, answers) in a sidecar, so mtrbench reads the structure back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.model import ConversationalQuery, TaskData
from mtrbench.formats.beir import BeirFolder
from mtrbench.formats.qrels import BEIR, format_qrels
from mtrbench.infra.atomic import atomic_write_text, ensure_folder
from mtrbench.infra.errors import MtrbenchError
from mtrbench.infra.numeric import json_lines, json_text

HF_CONFIGS = ("corpus", "queries", "qrels", "conversations")
# the export's own record: task, split, format and the query-text settings (truncation included)
EXPORT_RECORD = "mtrbench-export.json"
# split names of the corpus and queries configs, as in mteb's BEIR mirrors on the Hub (mteb/scifact)
CORPUS_SPLIT, QUERIES_SPLIT = "corpus", "queries"


@dataclass(frozen=True)
class QueryTexts:
    """Each query's text as the retriever saw it, and the settings that made it (recorded in the export)."""

    texts: Mapping[str, str]
    settings: dict[str, Any] = field(default_factory=dict)

    def of(self, query: ConversationalQuery) -> str:
        return self.texts[query.qid]


def _conversation_record(q: ConversationalQuery) -> dict[str, Any]:
    return {
        "_id": q.qid,
        "conversation_id": q.conversation_id,
        "turn_id": q.turn_id,
        "history": [{"role": m.role, "content": m.content} for m in q.history],
        "query": q.query,
        "gold_rewrite": q.gold_rewrite,
        "answers": list(q.answers),
    }


def _check_texts(task: TaskData, texts: QueryTexts) -> None:
    missing = [q.qid for q in task.queries if q.qid not in texts.texts]
    if missing:
        raise MtrbenchError(f"export: no serialized text for {len(missing)} queries (first: {missing[0]})")
    if texts.settings.get("truncate") not in ("left", "right", "none"):
        raise MtrbenchError(
            "export: the query texts must say how they were truncated (settings 'truncate': left, "
            "right, or none for texts written whole)"
        )


def write_record(task: TaskData, out: Path, texts: QueryTexts, fmt: str) -> Path:
    """``mtrbench-export.json``: what the export holds and how its query texts were made, so a reader can tell
    texts truncated for a model from texts written whole."""
    path = out / EXPORT_RECORD
    side, model = texts.settings.get("truncate"), texts.settings.get("model")
    if model is None:
        truncation = "none: texts written whole (--truncate none); a retriever with a token limit cuts them itself"
    elif side == "none":
        truncation = f"none, as `mtrbench eval --model {model}` (no token limit, or --truncate none)"
    else:
        truncation = f"{side} for {model}, as `mtrbench eval` truncates"
    atomic_write_text(
        path,
        json_text(
            {
                "task": task.name,
                "split": task.split,
                "format": fmt,
                "queries": len(task.queries),
                "documents": len(task.corpus),
                "serialization": texts.settings,
                "truncation": truncation,
            },
            path=path,
            indent=2,
        )
        + "\n",
    )
    return path


def export_beir(task: TaskData, out: Path, texts: QueryTexts) -> list[Path]:
    """BEIR files beir's own ``GenericDataLoader`` and retrievers read (string query ``text``); the
    ``conversations.jsonl`` sidecar keeps turn ids, history, rewrites and answers (SCHEMAS §9), and
    ``mtrbench eval`` prefers it to the text."""
    _check_texts(task, texts)
    folder = BeirFolder(out)
    corpus = json_lines(
        ({"_id": d, "title": t, "text": x} for d, t, x in zip(task.corpus.ids, task.corpus.titles, task.corpus.texts)),
        path=folder.corpus,
    )
    queries = json_lines(
        ({"_id": q.qid, "text": texts.of(q), "metadata": q.meta} for q in task.queries), path=folder.queries
    )
    qrels = format_qrels({q.qid: q.qrels for q in task.queries}, BEIR)
    sidecar = json_lines(
        ({**_conversation_record(q), "serialization": texts.settings} for q in task.queries),
        path=folder.conversations,
    )
    paths = [folder.corpus, folder.queries, folder.qrels(task.split), folder.conversations]
    for path, text in zip(paths, (corpus, queries, qrels, sidecar)):
        atomic_write_text(path, text)
    return [*paths, write_record(task, out, texts, "beir")]


def _meta_column(metas: list[dict[str, Any]]) -> tuple[list[Any], str]:
    """Per-query metadata as an Arrow struct when every value fits one schema, else JSON strings."""
    import pyarrow as pa

    try:
        typed = pa.array(metas)
        if pa.types.is_struct(typed.type) and typed.type.num_fields:
            return metas, "struct"
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        pass
    return [json_text(m, path=f"metadata of query {n}", sort_keys=True) for n, m in enumerate(metas, 1)], "json"


def export_hf(task: TaskData, card: TaskCard, out: Path, texts: QueryTexts) -> list[Path]:
    """A dataset folder laid out as mteb's retrieval datasets on the Hub: configs ``corpus``, ``queries``
    (``_id``, ``text``) and ``qrels`` (``query-id``, ``corpus-id``, ``score``), plus ``conversations``
    (one row per query: the structure), as Parquet files that README.md's YAML ``configs`` name.
    ``huggingface-cli upload --repo-type dataset ORG/NAME DIR`` publishes it as is."""
    import datasets

    _check_texts(task, texts)
    metas, meta_encoding = _meta_column([dict(q.meta) for q in task.queries])
    tables = {
        "corpus": datasets.Dataset.from_dict(
            {"_id": task.corpus.ids, "title": task.corpus.titles, "text": task.corpus.texts}
        ),
        "queries": datasets.Dataset.from_dict(
            {"_id": [q.qid for q in task.queries], "text": [texts.of(q) for q in task.queries]}
        ),
        "qrels": datasets.Dataset.from_list(
            [{"query-id": q.qid, "corpus-id": d, "score": g} for q in task.queries for d, g in q.qrels.items()],
            features=datasets.Features(
                {
                    "query-id": datasets.Value("string"),
                    "corpus-id": datasets.Value("string"),
                    "score": datasets.Value("int32"),
                }
            ),
        ),
        "conversations": datasets.Dataset.from_list(
            [
                {
                    **_conversation_record(q),
                    "candidate_doc_ids": list(q.candidate_doc_ids) if q.candidate_doc_ids is not None else None,
                    "meta": meta,
                }
                for q, meta in zip(task.queries, metas)
            ]
        ),
    }
    splits = {"corpus": CORPUS_SPLIT, "queries": QUERIES_SPLIT, "qrels": task.split, "conversations": task.split}
    files = {name: _write_parquet(tables[name], out / name, splits[name]) for name in HF_CONFIGS}
    readme = out / "README.md"
    atomic_write_text(readme, dataset_card(task, card, texts, splits, files, meta_encoding))
    return [readme, *(out / f for f in files.values()), write_record(task, out, texts, "hf")]


def _write_parquet(table, folder: Path, split: str) -> str:
    """``<split>-<content hash>.parquet``: datasets caches a local folder's config under a key that does not
    change when a file is rewritten in place, so a re-export to the same folder would load stale rows
    (mteb included); a new name per content makes a new key. Older exports of this split are removed."""
    import hashlib

    ensure_folder(folder)
    partial = folder / f".{split}.parquet.partial"
    table.to_parquet(str(partial))
    digest = hashlib.sha256(partial.read_bytes()).hexdigest()[:12]
    path = folder / f"{split}-{digest}.parquet"
    for old in folder.glob(f"{split}-*.parquet"):
        if old != path:
            old.unlink()
    partial.replace(path)
    return f"{folder.name}/{path.name}"


_TASK_CATEGORIES = {"conversational-retrieval": "text-retrieval", "retrieval": "text-retrieval"}


def dataset_card(
    task: TaskData, card: TaskCard, texts: QueryTexts, splits: dict[str, str], files: dict[str, str], meta_encoding: str
) -> str:
    """README.md: YAML metadata the Hub and ``datasets`` read (configs with data_files, license,
    task categories, languages, pretty name), then the task card's description and citation."""
    import yaml

    configs = [
        {"config_name": name, "data_files": [{"split": splits[name], "path": files[name]}]} for name in HF_CONFIGS
    ]
    header: dict[str, Any] = {
        "pretty_name": task.name,
        "license": _hub_license(card.license),
        "language": [_iso639_1(code) for code in card.languages],
        "task_categories": [_TASK_CATEGORIES.get(card.type, "text-retrieval")],
        "task_ids": ["document-retrieval"],
        "tags": ["mteb", "mtrbench", "conversational-retrieval", "multi-turn"],
        "configs": configs,
    }
    header = {k: v for k, v in header.items() if v is not None}
    settings = ", ".join(f"{k}={v}" for k, v in texts.settings.items() if v is not None)
    lines = [
        "---",
        yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip(),
        "---",
        "",
        f"# {task.name}",
        "",
        card.description.strip(),
        "",
        "## Layout",
        "",
        f"Split `{task.split}`: {len(task.queries)} queries (user turns), {len(task.corpus)} documents.",
        "",
        "| config | split | columns |",
        "|---|---|---|",
        f"| `corpus` | `{splits['corpus']}` | `_id`, `title`, `text` |",
        f"| `queries` | `{splits['queries']}` | `_id`, `text`: the conversation serialized as mtrbench evaluates it |",
        f"| `qrels` | `{splits['qrels']}` | `query-id`, `corpus-id`, `score` |",
        f"| `conversations` | `{splits['conversations']}` | `_id`, `conversation_id`, `turn_id`, `history` (role, "
        f"content), `query`, `gold_rewrite`, `answers`, `candidate_doc_ids`, `meta` "
        f"({'a struct' if meta_encoding == 'struct' else 'a JSON string'}) |",
        "",
        f"Query text settings: {settings or 'none'}. `mtrbench eval --task DIR` reads this folder (it re-serializes "
        f"each query from `conversations`); mteb's retrieval loader reads `corpus`, `queries` and `qrels`.",
        "",
    ]
    if texts.settings.get("truncate") == "none":
        lines += [
            "The query texts are written whole (not truncated for any model): a retriever with a token limit "
            "cuts them itself, which on long conversations can cut the question off.",
            "",
        ]
    if card.reference:
        lines += [f"Reference: {card.reference}", ""]
    if card.citation:
        lines += ["## Citation", "", "```bibtex", card.citation.strip(), "```", ""]
    return "\n".join(lines)


def _hub_license(license_name: str | None) -> str | None:
    """The Hub's license ids are lower case (cc-by-4.0, apache-2.0); anything unrecognised is 'other'."""
    if not license_name:
        return None
    lowered = license_name.strip().lower().replace(" ", "-")
    return lowered if lowered.replace("-", "").replace(".", "").isalnum() else "other"


def _iso639_1(code: str) -> str:
    """Hub cards use ISO 639-1 where one exists; task cards hold ISO 639-3 (mteb's), optionally with a script."""
    base = code.split("-")[0]
    short = {
        "eng": "en",
        "deu": "de",
        "fra": "fr",
        "spa": "es",
        "zho": "zh",
        "jpn": "ja",
        "dan": "da",
        "ita": "it",
        "por": "pt",
        "nld": "nl",
        "rus": "ru",
        "kor": "ko",
        "ara": "ar",
    }
    return short.get(base, base)
