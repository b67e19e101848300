"""What an UMBRELA judge is asked about one (query, passage) pair, and how its grade is read from the reply.

UMBRELA (Upadhyay, Pradeep, Thakur, Craswell and Lin, 2024; castorini/umbrela) reproduces the Bing relevance
prompt of Thomas et al. (SIGIR 2024) on TREC's 0-3 scale; TREC RAG 2024 filled its pools with it. The four grade
meanings below are UMBRELA's, word for word (a scale is reproduced exactly); the rest of the prompt is ours. As in
UMBRELA, the judge sees the query and the passage only (no reference answer), considers the searcher's intent,
how well the passage matches it and how trustworthy it is, and ends with ``##final score: N``.
"""

from __future__ import annotations

import hashlib
import json
import re

from mtrbench.assess.prompts import Case
from mtrbench.llm.replies import ExtractionError

# UMBRELA's grade meanings (qrel_zeroshot_bing), verbatim.
GRADE_MEANINGS = {
    0: "the passage has nothing to do with the query",
    1: "the passage seems related to the query but does not answer it",
    2: "the passage has some answer for the query, but the answer may be a bit unclear, or hidden amongst "
    "extraneous information",
    3: "the passage is dedicated to the query and contains the exact answer",
}
PROMPT_VERSION = "umbrela-zeroshot-1"  # recorded with every filled label; change it when the wording changes

# Restated to a judge whose reply could not be read (the client's repair turn).
GRADE_FORMAT = "one line '##final score: N' with N one of 0, 1, 2, 3, and nothing else"

# The whole number written is read (sign and decimals included) and then checked against the scale, so "-1" or
# "2.5" is a malformed reply, asked again, never the digit "1" or "2" inside it.
_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_FINAL = re.compile(r"final[\s_]*score\W{0,4}?(" + _NUMBER + r")", re.IGNORECASE)
_ALONE = re.compile(r"^\W*?(" + _NUMBER + r")\W*$")


def umbrela_messages(case: Case) -> list[dict[str, str]]:
    scale = "\n".join(f"{grade} = {meaning}" for grade, meaning in GRADE_MEANINGS.items())
    text = "\n".join(
        [
            "You judge how relevant a passage is to a search query, on a whole-number scale from 0 to 3 where:",
            scale,
            "",
            "Give 1 when the passage touches the topic only in part; 2 when it carries something essential to the "
            "whole topic together with other material; 3 when it is about the topic alone and entirely. When none "
            "of these fits, give 0.",
            "",
            f"Query: {case.query}",
            f"Passage: {case.document}",
            "",
            "Work through it in steps, silently: what is the searcher after? How well does the passage meet that "
            "intent? How far can the passage be trusted? Weigh these and settle on one grade.",
            "Write no code and no explanation. Reply with exactly one line in this form:",
            "##final score: N",
        ]
    )
    return [{"role": "user", "content": text}]


def parse_grade_reply(text: str) -> int:
    """The grade of a reply: the last ``final score: N`` (any case, ``#``/``*``/quotes around it), or a reply that
    is one number alone; N must be a whole number 0-3. Raises ExtractionError (the client then asks again) for a
    reply without one, and for a grade off the scale (``-1``, ``2.5``, ``4``): never clamped or truncated."""
    found = _FINAL.findall(text)
    alone = None if found else _ALONE.match(text.strip())
    written = found[-1] if found else alone.group(1) if alone else None
    if written is None:
        raise ExtractionError("reply has no '##final score: N' with N in 0-3")
    if written not in {str(grade) for grade in GRADE_MEANINGS}:
        raise ExtractionError(f"final score {written} is not one of 0, 1, 2, 3")
    return int(written)


def prompt_hash(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
