"""Fixtures for the TREC iKAT / CAsT 2022 tests.

The topics are the published ones (bundled in tasks/ikat and tasks/trec-cast-2022, MIT). The NIST qrels and the
submitted runs are not reachable offline, so the qrels and runs here are built in the published formats (TREC
qrels ``turn_id Q0 passage_id grade``; the official iKAT JSON run) with invented passage ids in ClueWeb22 form
and random grades and scores (seeded).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

TASKS = Path(__file__).resolve().parents[2] / "tasks"
IKAT = TASKS / "ikat"


def topics(year: int, split: str = "test") -> list[dict]:
    return json.loads((IKAT / f"{year}_{split}_topics.json").read_text(encoding="utf-8"))


def turn_ids(year: int, split: str = "test") -> list[str]:
    key = "responses" if year == 2025 else "turns"
    return [f"{t['number']}_{turn['turn_id']}" for t in topics(year, split) for turn in t[key]]


def passage(rng: random.Random) -> str:
    return f"clueweb22-en{rng.randrange(10000):04d}-{rng.randrange(100):02d}-{rng.randrange(100000):05d}:{rng.randrange(30)}"


def write_qrels(path: Path, qids: list[str], seed: int = 7) -> dict[str, dict[str, int]]:
    """Graded 0-4 qrels for ``qids``: the first turn all 0, the second grades 0-1 only, the rest 0-4."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    lines = []
    for n, qid in enumerate(qids):
        top = 0 if n == 0 else 1 if n == 1 else 4
        for _ in range(rng.randrange(3, 25)):
            doc = passage(rng)
            grade = rng.randint(0, top)
            qrels.setdefault(qid, {})[doc] = grade
            lines.append(f"{qid} Q0 {doc} {grade}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return qrels


def ranked_run(qrels: dict[str, dict[str, int]], qids: list[str], seed: int = 11, depth: int = 40) -> dict:
    """qid -> [(passage id, score)] best first: judged and unjudged passages, with tied scores."""
    rng = random.Random(seed)
    run: dict[str, list[tuple[str, float]]] = {}
    for qid in qids:
        pool = list(qrels.get(qid, {})) + [passage(rng) for _ in range(depth)]
        rng.shuffle(pool)
        scores = [round(rng.choice([1.0, 0.5]) * rng.randrange(1, 12), 1) for _ in pool[:depth]]  # many ties
        ranked = sorted(zip(pool[:depth], scores), key=lambda p: -p[1])
        run[qid] = ranked
    return run


def ikat_json_run(
    run: dict[str, list[tuple[str, float]]], ptkb: dict[str, list[tuple[str, float]]] | None = None
) -> dict:
    """The official iKAT 2023 JSON run of ``run`` (one response per turn)."""
    turns = []
    for qid, ranked in run.items():
        turns.append(
            {
                "turn_id": qid,
                "responses": [
                    {
                        "rank": 1,
                        "text": f"an invented answer for {qid}",
                        "passage_provenance": [
                            {"id": doc, "text": "", "score": score, "used": i < 3}
                            for i, (doc, score) in enumerate(ranked)
                        ],
                        "ptkb_provenance": [
                            {"id": sid, "text": "", "score": score} for sid, score in (ptkb or {}).get(qid, [])
                        ],
                    }
                ],
            }
        )
    return {"run_name": "fixture", "run_type": "automatic", "turns": turns}
