"""Data: task cards, the uniform task model, format loaders."""

from __future__ import annotations

from pathlib import Path

from mtrbench.data.cards import TaskCard, card_from_dict, get_card
from mtrbench.data.model import TaskData
from mtrbench.errors import MtrbenchError


def detect_format(folder: Path) -> str:
    if (folder / "conversations").is_dir() and (folder / "corpus.jsonl").is_file():
        return "mtrbench"
    if (folder / "corpus.jsonl").is_file() and (folder / "queries.jsonl").is_file():
        return "beir"
    raise MtrbenchError(f"{folder}: cannot tell the format (expected corpus.jsonl with conversations/ "
                        f"(mtrbench) or queries.jsonl + qrels/ (BEIR))")


def card_for_folder(folder: Path) -> TaskCard:
    """An ad-hoc card for ``--task PATH`` pointing at a local folder in a known format."""
    fmt = detect_format(folder)
    split_dir = folder / ("conversations" if fmt == "mtrbench" else "qrels")
    ext = "jsonl" if fmt == "mtrbench" else "tsv"
    splits = sorted(p.stem for p in split_dir.glob(f"*.{ext}"))
    if not splits:
        raise MtrbenchError(f"{split_dir}: no split files (*.{ext})")
    eval_split = "test" if "test" in splits else splits[0]
    return card_from_dict({"name": folder.resolve().name, "description": f"local {fmt} folder {folder}",
                           "format": fmt, "source": {"path": str(folder.resolve())}, "splits": splits,
                           "eval_split": eval_split}, str(folder))


def resolve_card(task: str) -> TaskCard:
    path = Path(task).expanduser()
    if path.is_dir():
        return card_for_folder(path)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        from mtrbench.data.cards import load_card

        return load_card(path)
    return get_card(task)


def load_task(task: str | TaskCard, split: str | None = None, data_dir: str | Path | None = None,
              corpus_path: str | Path | None = None, require_corpus: bool = True) -> TaskData:
    from mtrbench.data.loaders import LoadRequest, get_loader

    card = task if isinstance(task, TaskCard) else resolve_card(task)
    split = split or card.eval_split
    if split not in card.splits:
        raise MtrbenchError(f"task '{card.name}' has no split '{split}' (splits: {', '.join(card.splits)})")
    folder = Path(data_dir).expanduser() if data_dir else None
    if folder is not None and not folder.exists():
        raise MtrbenchError(f"--data-dir {folder} does not exist")
    corpus = Path(corpus_path).expanduser() if corpus_path else None
    if corpus is not None and not corpus.exists():
        raise MtrbenchError(f"--corpus {corpus} does not exist")
    request = LoadRequest(split=split, data_dir=folder, corpus_path=corpus, require_corpus=require_corpus)
    return get_loader(card.format)(card, request)
