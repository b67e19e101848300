"""Data: task cards, the uniform task model, format loaders."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection
from pathlib import Path

from mtrbench.data.cards import TaskCard, all_cards, card_from_dict, get_card, load_card
from mtrbench.data.loaders import LoadRequest, get_loader
from mtrbench.data.loaders.common import keeping_only
from mtrbench.data.loaders.hf import folder_splits, is_hf_layout
from mtrbench.data.model import Corpus, TaskData
from mtrbench.infra.errors import DataError, MtrbenchError, UserInputError

log = logging.getLogger(__name__)


def detect_format(folder: Path) -> str:
    if is_hf_layout(folder):
        return "hf"
    if (folder / "conversations").is_dir() and (folder / "corpus.jsonl").is_file():
        return "mtrbench"
    if (folder / "corpus.jsonl").is_file() and (folder / "queries.jsonl").is_file():
        return "beir"
    raise DataError(
        f"{folder}: cannot tell the format (expected corpus.jsonl with conversations/ "
        f"(mtrbench), queries.jsonl + qrels/ (BEIR) or a README.md whose configs name corpus, "
        f"queries and qrels (Hugging Face, `mtrbench export --format hf`))"
    )


def card_for_folder(folder: Path) -> TaskCard:
    """An ad-hoc card for ``--task PATH`` pointing at a local folder in a known format."""
    fmt = detect_format(folder)
    if fmt == "hf":
        splits = folder_splits(folder)
        if not splits:
            raise DataError(f"{folder}/README.md: the qrels config names no split")
    else:
        split_dir = folder / ("conversations" if fmt == "mtrbench" else "qrels")
        ext = "jsonl" if fmt == "mtrbench" else "tsv"
        splits = sorted(p.stem for p in split_dir.glob(f"*.{ext}"))
        if not splits:
            raise DataError(f"{split_dir}: no split files (*.{ext})")
    eval_split = "test" if "test" in splits else splits[0]
    return card_from_dict(
        {
            "name": folder.resolve().name,
            "description": f"local {fmt} folder {folder}",
            "format": fmt,
            "source": {"path": str(folder.resolve())},
            "splits": splits,
            "eval_split": eval_split,
        },
        str(folder),
    )


def _note(message: str) -> None:
    log.warning(f"note: {message}")


def looks_like_path(task: str) -> bool:
    """A task argument names a file or folder when it has a path separator or starts with '.' or '~';
    otherwise it is a name (registered task names have neither)."""
    return os.sep in task or bool(os.altsep and os.altsep in task) or task.startswith((".", "~"))


def resolve_card(task: str, note: Callable[[str], None] = _note) -> TaskCard:
    """A registered task name, a task card YAML file or a data folder. Registered names win over a
    same-named folder in the working directory (``note`` says so); ``./NAME`` picks the folder. A plain
    name that is only a folder here still works, with a note."""
    path = Path(task).expanduser()
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return load_card(path)
    if looks_like_path(task):
        if path.is_dir():
            return card_for_folder(path)
        raise UserInputError(
            f"{task}: no such folder or task card file (.yaml); a registered task name has no "
            f"'/' (`mtrbench tasks` lists them)"
        )
    cards = all_cards()
    if task in cards:
        if path.is_dir():
            note(f"'{task}' is a registered task; using it, not the folder ./{task} (pass ./{task} for the folder)")
        return cards[task]
    if path.is_dir():
        try:
            card = card_for_folder(path)
        except MtrbenchError as exc:
            raise UserInputError(
                f"'{task}' is neither a registered task (`mtrbench tasks` lists them) nor a task folder: {exc}"
            ) from None
        note(f"'{task}' is not a registered task; using the folder ./{task}")
        return card
    return get_card(task)  # the unknown-name error, with suggestions


def load_task(
    task: str | TaskCard,
    split: str | None = None,
    data_dir: str | Path | None = None,
    corpus_path: str | Path | None = None,
    require_corpus: bool = True,
    corpus_ids: Collection[str] | None = None,
) -> TaskData:
    """One split of a task. ``corpus_ids``: keep only these documents of the corpus (loaders reading it through
    the shared readers stream it and store nothing else; qrels naming another document are dropped)."""
    card = task if isinstance(task, TaskCard) else resolve_card(task)
    split = split or card.eval_split
    if split not in card.splits:
        raise UserInputError(f"task '{card.name}' has no split '{split}' (splits: {', '.join(card.splits)})")
    folder = Path(data_dir).expanduser() if data_dir else None
    if folder is not None and not folder.exists():
        raise UserInputError(f"--data-dir {folder} does not exist")
    corpus = Path(corpus_path).expanduser() if corpus_path else None
    if corpus is not None and not corpus.exists():
        raise UserInputError(f"--corpus {corpus} does not exist")
    request = LoadRequest(split=split, data_dir=folder, corpus_path=corpus, require_corpus=require_corpus)
    with keeping_only(corpus_ids):
        task_data = get_loader(card.format)(card, request)
    wanted = None if corpus_ids is None else set(corpus_ids)
    if wanted is not None and len(task_data.corpus) > len(wanted):  # a loader that reads its corpus its own way
        kept = [i for i, doc_id in enumerate(task_data.corpus.ids) if doc_id in wanted]
        corpus = task_data.corpus
        task_data.corpus = Corpus(
            [corpus.ids[i] for i in kept], [corpus.titles[i] for i in kept], [corpus.texts[i] for i in kept]
        )
    return task_data
