"""Raw documents in: a JSON-lines file, a Parquet file, a folder of text/Markdown files or a Hub dataset.

Every document becomes ``RawDocument(doc_id, title, text)``. Files that cannot be decoded as UTF-8 in a
folder are skipped and counted; in a JSON-lines file a line that is not a JSON object with a string
``text`` is an error naming the file and the line, since the rest of that file is not trustworthy either.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from mtrbench.data.hub import load_split
from mtrbench.infra.errors import DataError, UserInputError

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst")
TEXT_FIELDS = ("text", "contents", "content", "body")
ID_FIELDS = ("_id", "id", "doc_id", "docid")


@dataclass(frozen=True)
class RawDocument:
    doc_id: str
    title: str
    text: str


@dataclass
class ReadResult:
    documents: list[RawDocument]
    warnings: Counter = field(default_factory=Counter)


def read_documents(source: str, split: str = "train") -> ReadResult:
    """The documents of ``source``: a path (file or folder) or, when no such path exists, a Hub dataset id."""
    path = Path(source).expanduser()
    if path.is_dir():
        return _read_folder(path)
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix in (".jsonl", ".json"):
            return _read_jsonl(path)
        if suffix == ".parquet":
            return _read_rows(_parquet_rows(path), str(path))
        if suffix in TEXT_SUFFIXES:
            return _read_folder_files([path], path.parent)
        raise UserInputError(
            f"{path}: unknown corpus file type '{suffix}' (expected .jsonl, .parquet, a folder of "
            f"{'/'.join(TEXT_SUFFIXES)} files, or a Hugging Face dataset id)"
        )
    if "/" in source and not source.startswith((".", "/", "~")):
        return _read_rows(_hub_rows(source, split), f"Hub dataset {source} ({split})")
    raise DataError(f"corpus {source}: no such file or folder")


def source_fingerprint(source: str) -> str:
    """Names, sizes and modification times of a local corpus's files (a Hub id stands for itself): an edited
    corpus is curated again on a rerun."""
    path = Path(source).expanduser()
    if not path.exists():
        return f"hub:{source}"
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for file in files:
        stat = file.stat()
        digest.update(
            f"{file.relative_to(path) if path.is_dir() else file.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode()
        )
    return digest.hexdigest()[:16]


def _document(row: object, origin: str, index: int) -> RawDocument:
    if not isinstance(row, dict):
        raise DataError(f"{origin} record {index}: expected a JSON object, got {type(row).__name__}")
    text_key = next((k for k in TEXT_FIELDS if k in row), None)
    if text_key is None or not isinstance(row[text_key], str):
        raise DataError(f"{origin} record {index}: needs a string field {' or '.join(TEXT_FIELDS)}")
    id_key = next((k for k in ID_FIELDS if row.get(k) is not None), None)
    doc_id = str(row[id_key]) if id_key else f"doc{index}"
    title = row.get("title")
    return RawDocument(doc_id=doc_id, title=title if isinstance(title, str) else "", text=row[text_key])


def _read_jsonl(path: Path) -> ReadResult:
    documents = []
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise DataError(f"{path} line {line_no}: not UTF-8 text") from None
            except json.JSONDecodeError as err:
                raise DataError(f"{path} line {line_no}: not valid JSON ({err.msg})") from None
            documents.append(_document(row, str(path), line_no))
    return ReadResult(documents)


def _read_rows(rows: object, origin: str) -> ReadResult:
    return ReadResult([_document(row, origin, i) for i, row in enumerate(rows)])  # type: ignore[arg-type]


def _parquet_rows(path: Path) -> list[dict]:
    import pyarrow.parquet as pq  # deferred: pyarrow only for a Parquet corpus

    try:
        return pq.read_table(path).to_pylist()
    except Exception as err:  # pyarrow raises several types for a broken file
        raise DataError(f"{path}: cannot read as Parquet ({type(err).__name__}: {err})") from None


def _hub_rows(dataset_id: str, split: str) -> list[dict]:
    return list(load_split(dataset_id, split=split, what=f"corpus {dataset_id}"))


def _read_folder(folder: Path) -> ReadResult:
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix.lower() in TEXT_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    if not files:
        raise DataError(f"{folder}: no {'/'.join(TEXT_SUFFIXES)} files in this folder")
    return _read_folder_files(files, folder)


def _read_folder_files(files: list[Path], root: Path) -> ReadResult:
    result = ReadResult([])
    for file in files:
        try:
            text = file.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            result.warnings["files not decodable as UTF-8 (skipped)"] += 1
            continue
        relative = file.relative_to(root).with_suffix("").as_posix()
        result.documents.append(RawDocument(doc_id=relative, title=file.stem.replace("_", " "), text=text))
    return result
