"""A passage collection in a simple line format, read one line at a time (TREC iKAT's ClueWeb22-B passages,
TREC CAsT 2022's MS MARCO v2 / KILT / WaPo passages). Not a loader: the iKAT and CAsT 2022 loaders use it.

Two layouts, plain or gzip-compressed (``.gz``):

* JSONL, one passage a line: ``{"id": "clueweb22-en0000-06-17856:4", "contents": "...", "title": "..."}``;
  the id may also be ``_id``/``docid``/``pid``, the text ``text``/``contents``/``passage``; ``title`` is optional.
  The iKAT organisers' layout, ``{"doc_id": "clueweb22-en0000-06-17856", "passage_id": "4", "passage_text":
  "..."}``, is read too: a record with both ``doc_id`` and ``passage_id`` is the passage ``DOC_ID:PASSAGE_ID``,
  the id iKAT's qrels and runs use.
* TSV, one passage a line: ``id<TAB>text`` or ``id<TAB>title<TAB>text`` (an optional header row naming ``id``).

The file is streamed: only the three columns the corpus keeps (ids, titles, texts) grow as it is read, never a
parsed copy of the whole file. A folder reads every ``*.jsonl[.gz]`` and ``*.tsv[.gz]`` file in it, in name order.
``keep``: only the passages whose ids it holds are kept (a pool of judged and retrieved passages drawn from the
full 116.8M-passage collection).
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from mtrbench.data.model import Corpus
from mtrbench.infra.errors import DataError

ID_FIELDS = ("id", "_id", "docid", "doc_id", "pid", "passage_id")
TEXT_FIELDS = ("contents", "text", "passage", "passage_text", "body")
# iKAT's passage files name the document and the passage's place in it; the passage is "DOC_ID:PASSAGE_ID"
IKAT_ID_FIELDS = ("doc_id", "passage_id")
SUFFIXES = (".jsonl", ".jsonl.gz", ".tsv", ".tsv.gz")


def corpus_files(path: Path) -> list[Path]:
    """The passage files of ``path``: the file itself, or a folder's ``*.jsonl[.gz]`` / ``*.tsv[.gz]`` files."""
    if path.is_file():
        if not path.name.lower().endswith(SUFFIXES):
            raise DataError(f"--corpus {path}: expected a .jsonl or .tsv passage file (optionally .gz)")
        return [path]
    files = sorted(p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(SUFFIXES))
    if not files:
        raise DataError(f"--corpus {path}: no *.jsonl or *.tsv passage file in this folder")
    return files


def read_passages(path: Path, keep: Collection[str] | None = None) -> Corpus:
    """The passages of ``path`` (a file or folder), streamed; see the module docstring for the layouts."""
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    for file in corpus_files(Path(path)):
        for doc_id, title, text in _passages(file):
            if keep is None or doc_id in keep:
                ids.append(doc_id)
                titles.append(title)
                texts.append(text)
    return Corpus(ids=ids, titles=titles, texts=texts)


def _open(path: Path) -> io.TextIOBase:
    if path.name.lower().endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")  # noqa: SIM115 - closed by the caller's with


def _passages(path: Path) -> Iterator[tuple[str, str, str]]:
    tsv = ".tsv" in path.name.lower()
    try:
        with _open(path) as handle:
            for n, line in enumerate(handle):
                line = line.rstrip("\n").rstrip("\r")
                if not line.strip():
                    continue
                row = _tsv_row(line, path, n) if tsv else _json_row(line, path, n)
                if row is not None:
                    yield row
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except (OSError, EOFError) as exc:
        raise DataError(f"{path}: cannot be read ({exc})") from None


def _json_row(line: str, path: Path, n: int) -> tuple[str, str, str]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} record {n}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(record, dict):
        raise DataError(f"{path} record {n}: a passage must be a JSON object")
    doc_id = _passage_id(record, path, n)
    text_field = next((f for f in TEXT_FIELDS if isinstance(record.get(f), str)), None)
    if text_field is None:
        raise DataError(f"{path} record {n} ({doc_id}): a passage needs a string 'contents', 'text' or 'passage_text'")
    return doc_id, str(record.get("title") or ""), record[text_field]


def _passage_id(record: dict[str, Any], path: Path, n: int) -> str:
    whole_id = ("id", "_id", "docid", "pid")  # a record naming its passage whole is read by that name
    if all(record.get(f) is not None for f in IKAT_ID_FIELDS) and not any(f in record for f in whole_id):
        return ":".join(str(record[f]) for f in IKAT_ID_FIELDS)
    id_field = next((f for f in ID_FIELDS if f in record), None)
    if id_field is None or record[id_field] is None:
        raise DataError(
            f"{path} record {n}: a passage needs an 'id' (or one of {list(ID_FIELDS[1:])}, or iKAT's "
            f"'doc_id' and 'passage_id')"
        )
    return str(record[id_field])


def _tsv_row(line: str, path: Path, n: int) -> tuple[str, str, str] | None:
    fields = line.split("\t")
    if len(fields) not in (2, 3):
        raise DataError(f"{path} record {n}: a TSV passage needs 'id<TAB>text' or 'id<TAB>title<TAB>text'")
    if n == 0 and fields[0].strip().lower() in ID_FIELDS:
        return None  # a header row
    title = fields[1] if len(fields) == 3 else ""
    return fields[0].strip(), title, fields[-1]
