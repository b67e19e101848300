"""Judge prompts, written for mtrbench after RAD-Bench App. G (reference-guided 1-10 rating per scenario and
turn) and a binary correct/incorrect verdict per turn.

RAD-Bench's scenarios: RS (retrieval synthesis: is the answer helpful and does it cover the reference
knowledge points), RR (retrieval reasoning: is it correct, reasoned and grounded in the given context, as
the reference is), TR (travel planning: is the plan feasible and does it meet the user's accumulated
requirements). As in RAD-Bench, earlier turns are shown with the *reference* answers, never the model's own;
the rating is asked as ``Rating: [[N]]`` after a short justification.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from mtrbench.llm.replies import extract_rating, extract_verdict

SCENARIOS = ("RS", "RR", "TR")
RATING_LOW, RATING_HIGH = 1, 10
SYSTEM = "You are a careful, impartial evaluator of answers written by AI assistants."

_CRITERIA = {
    "RS": (
        "Judge two things. Helpfulness: how well the answer serves the user's current question. "
        "Informativeness: the reference lists knowledge points a good answer should cover; judge how many of "
        "them the answer covers, and how appropriately. Start by comparing the answer with the reference "
        "knowledge points."
    ),
    "RR": (
        "Judge correctness, helpfulness and the soundness of the reasoning, and how well the answer uses the "
        "context it was given: it must agree with that context and state nothing the context does not support. "
        "The reference answer shows a correct response. Start by comparing the answer with the reference and "
        "checking it against the context."
    ),
    "TR": (
        "The answer is a travel plan. Judge whether it is feasible and coherent, and whether it meets every "
        "requirement the user has stated so far (destination, duration, budget, preferences), including those "
        "added in this turn; it must agree with the context and invent nothing. Start by checking the plan "
        "against the user's accumulated requirements."
    ),
}
_LATER_TURN = (
    "This is turn {turn} of a conversation. The earlier turns are shown with reference answers; judge "
    "only the assistant's answer to the current question, and whether it stays consistent with the "
    "constraints set earlier."
)
_RATING_TAIL = (
    "Be objective. Explain your assessment in a few sentences, then give a rating from 1 (useless) to "
    '10 (excellent) in exactly this form: "Rating: [[N]]", for example "Rating: [[6]]".'
)
_VERDICT_TASK = (
    "Decide whether the assistant's answer to the current question is correct. It is correct when it "
    "answers the question and agrees with the reference answer on the facts that matter; extra detail "
    "that does not contradict the reference is fine. It is incorrect when it contradicts the reference, "
    "misses the fact the question asks for, or does not answer. Explain briefly, then end with exactly "
    'one line: "Verdict: [[CORRECT]]" or "Verdict: [[INCORRECT]]".'
)


@dataclass(frozen=True)
class TurnToJudge:
    """What a judge sees of one turn."""

    question: str
    answer: str
    reference: str | None = None
    context: tuple[str, ...] = ()  # passages / documents given to the assistant
    earlier: tuple[tuple[str, str], ...] = ()  # (question, reference answer) of earlier turns
    turn: int = 1


def _block(title: str, text: str) -> str:
    return f"[{title}]\n{text}\n[End of {title.lower()}]"


def _history(earlier: Sequence[tuple[str, str]], with_answers: bool = True) -> str:
    lines = []
    for i, (question, answer) in enumerate(earlier, 1):
        lines.append(f"User (turn {i}): {question}")
        if with_answers and answer:
            lines.append(f"Reference answer (turn {i}): {answer}")
    return "\n".join(lines)


def _context(passages: Sequence[str]) -> str:
    return "\n\n".join(f"[{i}] {p}" for i, p in enumerate(passages, 1)) if passages else "(no context given)"


def rating_messages(scenario: str, turn: TurnToJudge) -> list[dict[str, str]]:
    """The reference-guided 1-10 rating prompt of one scenario (RS, RR, TR) for one turn."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}")
    parts = ["Evaluate the answer an AI assistant gave to a user's question. " + _CRITERIA[scenario]]
    if turn.earlier:
        later = _LATER_TURN.format(turn=turn.turn)
        parts.append(
            later.replace("earlier turns are shown with reference answers", "earlier questions are shown")
            if scenario == "TR"
            else later
        )
    parts.append(_RATING_TAIL)
    if turn.earlier:
        # travel planning shows only the earlier questions, as its requirements live in them
        parts.append(_block("Conversation so far", _history(turn.earlier, with_answers=scenario != "TR")))
    parts.append(_block("Current question", turn.question))
    if scenario in ("RR", "TR"):
        parts.append(_block("Context", _context(turn.context)))
    if turn.reference is not None and (scenario != "TR" or turn.turn >= 3):  # TR: the final plan only
        label = "Reference knowledge points" if scenario == "RS" else "Reference answer"
        parts.append(_block(label, turn.reference))
    parts.append(_block("Assistant's answer", turn.answer))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def verdict_messages(turn: TurnToJudge) -> list[dict[str, str]]:
    """The binary verdict prompt: is this turn's answer correct, given the reference answer."""
    parts = [_VERDICT_TASK]
    if turn.earlier:
        parts.append(_block("Conversation so far", _history(turn.earlier)))
    parts.append(_block("Current question", turn.question))
    if turn.context:
        parts.append(_block("Context", _context(turn.context)))
    parts.append(_block("Reference answer", turn.reference or "(none)"))
    parts.append(_block("Assistant's answer", turn.answer))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def parse_rating(text: str) -> float:
    """``Rating: [[7]]`` (mtrbench.llm.replies); outside 1-10 or absent -> ExtractionError (asked again)."""
    return extract_rating(text, RATING_LOW, RATING_HIGH)


# Restated to the judge when its reply could not be read (the client's repair turn).
RATING_FORMAT = 'a short justification, then a last line "Rating: [[N]]" with N a whole number from 1 to 10'
VERDICT_FORMAT = 'a brief explanation, then a last line "Verdict: [[CORRECT]]" or "Verdict: [[INCORRECT]]"'


def parse_verdict(text: str) -> int:
    """1 for CORRECT, 0 for INCORRECT, read under the shared leniency policy (``mtrbench.llm.replies``):
    ``[[CORRECT]]``, ``Verdict: [CORRECT]``, ``{"verdict": "correct"}``, ... Neither -> ExtractionError."""
    return int(extract_verdict(text, "CORRECT", "INCORRECT"))


def prompt_hash(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
