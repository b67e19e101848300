"""Derive reference_subset.jsonl from IBM/mt-rag-benchmark's
mtrag-human/evaluations/reference_subset_with_human_evaluations.json (2.2 MB, too big to commit whole).

    python derive_reference_subset.py PATH/TO/reference_subset_with_human_evaluations.json

One line per evaluated response (477: 3 models x 159 tasks), only what the tests read: the response, the task's
reference answer (its only target) and answerability label, and the stored algorithmic values: RougeL,
Bert-Rec (BertscoreR), Bert-KPrec (best BertscoreP over the passages), conditional_idk and rb_agg. Human
ratings, passages and other fields are left out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(source: str) -> None:
    data = json.loads(Path(source).read_text(encoding="utf-8"))
    tasks = {t["task_id"]: t for t in data["tasks"]}
    lines = []
    for e in data["evaluations"]:
        task, a = tasks[e["task_id"]], e["annotations"]
        lines.append(
            json.dumps(
                {
                    "task_id": e["task_id"],
                    "model_id": e["model_id"],
                    "response": e["model_response"],
                    "target": task["targets"][0]["text"],
                    "answerability": task["Answerability"][0],
                    "RougeL": a["RougeL"]["system"]["value"],
                    "BertscoreR": a["Bert-Rec"]["system"]["value"],
                    "BertKPrec": a["Bert-KPrec"]["system"]["value"],
                    "conditional_idk": a["conditional_idk"]["composite"]["value"],
                    "rb_agg": a["rb_agg"]["composite"]["value"],
                },
                ensure_ascii=False,
            )
        )
    out = Path(__file__).with_name("reference_subset.jsonl")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} responses -> {out}")


if __name__ == "__main__":
    main(sys.argv[1])
