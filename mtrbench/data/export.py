"""Write any task split as BEIR files or as Hugging Face datasets ready for ``push_to_hub``."""

from __future__ import annotations

import json
from pathlib import Path

from mtrbench.atomic import atomic_write_text
from mtrbench.data.model import TaskData
from mtrbench.formats.beir import BeirFolder
from mtrbench.formats.qrels import BEIR, format_qrels

FORMATS = ("beir", "hf")


def _messages(q) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in q.history] + [{"role": "user", "content": q.query}]


def export_beir(task: TaskData, out: Path) -> list[Path]:
    """BEIR files; a query's ``text`` is its conversation (our BEIR loader and mteb read that), and the
    ``conversations.jsonl`` sidecar keeps turn ids, rewrites and answers (SCHEMAS §9)."""
    corpus = "".join(json.dumps({"_id": d, "title": t, "text": x}) + "\n"
                     for d, t, x in zip(task.corpus.ids, task.corpus.titles, task.corpus.texts))
    queries = "".join(json.dumps({"_id": q.qid, "text": _messages(q), "metadata": q.meta}) + "\n" for q in task.queries)
    qrels = format_qrels({q.qid: q.qrels for q in task.queries}, BEIR)
    sidecar = "".join(json.dumps({
        "_id": q.qid, "conversation_id": q.conversation_id, "turn_id": q.turn_id,
        "history": [{"role": m.role, "content": m.content} for m in q.history], "query": q.query,
        "gold_rewrite": q.gold_rewrite, "answers": list(q.answers)}) + "\n" for q in task.queries)
    folder = BeirFolder(out)
    paths = [folder.corpus, folder.queries, folder.qrels(task.split), folder.conversations]
    for path, text in zip(paths, (corpus, queries, qrels, sidecar)):
        atomic_write_text(path, text)
    return paths


def export_hf(task: TaskData, out: Path) -> list[Path]:
    """Two DatasetDicts saved with ``save_to_disk``: ``corpus`` and ``queries`` (one split each).

    Push with ``datasets.load_from_disk(DIR/"queries").push_to_hub(REPO, config_name="queries")``
    and the same for ``corpus``.
    """
    import datasets

    corpus = datasets.Dataset.from_dict({"_id": task.corpus.ids, "title": task.corpus.titles,
                                         "text": task.corpus.texts})
    queries = datasets.Dataset.from_list([{
        "qid": q.qid, "conversation_id": q.conversation_id, "turn_id": q.turn_id,
        "history": [{"role": m.role, "content": m.content} for m in q.history], "query": q.query,
        "gold_rewrite": q.gold_rewrite, "answers": list(q.answers),
        "qrels": [{"doc_id": d, "score": g} for d, g in q.qrels.items()],
        "candidate_doc_ids": list(q.candidate_doc_ids) if q.candidate_doc_ids is not None else None,
        "meta": json.dumps(q.meta, sort_keys=True)} for q in task.queries])
    paths = [out / "corpus", out / "queries"]
    datasets.DatasetDict({"corpus": corpus}).save_to_disk(str(paths[0]))
    datasets.DatasetDict({task.split: queries}).save_to_disk(str(paths[1]))
    return paths
