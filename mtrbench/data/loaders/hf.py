"""A Hub-ready dataset folder (``mtrbench export --format hf``) or a Hub repository laid out the same way.

mteb's retrieval layout, README.md ``configs`` naming the data files::

    corpus         split corpus    {_id, title, text}
    queries        split queries   {_id, text}   (text: the serialized conversation)
    qrels          split <split>   {query-id, corpus-id, score}
    conversations  split <split>   {_id, conversation_id, turn_id, history, query, gold_rewrite, answers,
                                    candidate_doc_ids, meta}   (optional: without it, ``text`` is the query)

Read through ``datasets.load_dataset(location, config)``, so a local folder loads exactly as its
Hub copy would.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from mtrbench.data.cards import TaskCard
from mtrbench.data.hub import load_split
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.beir import queries_from_rows
from mtrbench.data.loaders.common import corpus_from_rows
from mtrbench.data.model import TaskData
from mtrbench.data.validate import check_corpus, check_queries
from mtrbench.formats.beir import qrels_from_rows
from mtrbench.infra.errors import DataError, MtrbenchError, UserInputError

REQUIRED_CONFIGS = ("corpus", "queries", "qrels")


def card_configs(folder: Path) -> dict[str, list[dict[str, str]]]:
    """README.md's ``configs``: config name -> its data_files (``split``, ``path``); {} when there are none."""
    readme = folder / "README.md"
    if not readme.is_file():
        return {}
    text = readme.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return {}
    front, _, _ = text[3:].partition("\n---")
    try:
        header = yaml.safe_load(front) or {}
    except yaml.YAMLError:
        return {}
    configs = header.get("configs") if isinstance(header, dict) else None
    if not isinstance(configs, list):
        return {}
    out = {}
    for config in configs:
        if isinstance(config, dict) and isinstance(config.get("config_name"), str):
            files = config.get("data_files")
            out[config["config_name"]] = [f for f in files if isinstance(f, dict)] if isinstance(files, list) else []
    return out


def is_hf_layout(folder: Path) -> bool:
    return all(name in card_configs(folder) for name in REQUIRED_CONFIGS)


def folder_splits(folder: Path) -> list[str]:
    """The evaluation splits of a local HF-layout folder: the splits of its ``qrels`` config."""
    return sorted({str(f["split"]) for f in card_configs(folder).get("qrels", []) if f.get("split")})


def _one_split(location: str, config: str, wanted: str, splits: list[str] | None) -> str:
    """mteb's rule for corpus and queries: the requested split if present, else the config's only split."""
    if not splits or wanted in splits:
        return wanted
    if len(splits) == 1:
        return splits[0]
    raise UserInputError(f"{location}: config '{config}' has splits {splits}, none named '{wanted}'")


@register("hf")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    split = request.split
    folder = request.data_dir or card.local_path()
    location = str(folder) if folder is not None else card.source.hub
    revision = None if folder is not None else card.source.revision
    configs = card_configs(Path(folder)) if folder is not None else {}
    if folder is not None:
        missing = [c for c in REQUIRED_CONFIGS if c not in configs]
        if missing:
            raise DataError(f"{folder}/README.md: configs {missing} missing (needs {list(REQUIRED_CONFIGS)})")

    def rows(config: str, wanted: str, what: str) -> Any:
        splits = [str(f.get("split")) for f in configs.get(config, [])] or None
        return load_split(
            location,
            config=config,
            split=_one_split(location, config, wanted, splits),
            revision=revision,
            what=f"{card.name} {what}",
        )

    corpus_rows = rows("corpus", "corpus", "corpus")
    query_rows = rows("queries", "queries", "queries")
    qrels = qrels_from_rows(rows("qrels", split, f"qrels ({split})"), f"{location} qrels ({split})")
    sidecar = None
    if folder is None or "conversations" in configs:
        try:
            sidecar = rows("conversations", split, f"conversations ({split})")
        except MtrbenchError:
            if folder is not None:
                raise
            # a Hub copy of a plain mteb dataset has no conversations config: the query text is the query
    origin = location
    corpus = corpus_from_rows(corpus_rows, f"{origin} corpus")
    if not len(corpus):
        raise DataError(f"{origin} corpus: the corpus has no document")
    check_corpus(corpus, f"{origin} corpus")
    warnings: Counter = Counter()
    queries = queries_from_rows(query_rows, qrels, sidecar, f"{origin} queries", warnings)
    if not queries:
        raise DataError(f"{origin} queries: no query has qrels in split '{split}'")
    check_queries(queries, corpus, origin, warnings)
    return TaskData(
        name=card.name, split=split, corpus=corpus, queries=queries, dataset_revision=revision, warnings=warnings
    )
