"""What the DREAM agents, the pre-filter judges and the adjudicator are asked, and how replies are read.

The procedure follows DREAM (seed ``dream-bridge.txt`` Tables 17, 27-29): answer-aware relevance,
"Agent A"/"Agent B" role markers, opposing stances stated as round-1 history, the previous round's
reasons and labels as later history, and a JSON reply ``{"reference": [...], "reason": ..., "response":
"yes"|"no"}``. The wording is ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mtrbench.data.model import USER, ConversationalQuery, Corpus
from mtrbench.llm.replies import extract_json

YES_MEANING = "The passage holds everything needed to state at least one of the answers to the question."
NO_MEANING = "The passage does not hold everything needed to state any of the answers to the question."


@dataclass(frozen=True)
class Case:
    """One (query, document) pair as the judges see it."""

    qid: str
    doc_id: str
    query: str
    answers: tuple[str, ...]
    document: str


def query_text(query: ConversationalQuery, form: str) -> str:
    """The question as shown to the judges. ``auto``: the gold rewrite when there is one, else the conversation."""
    if form == "auto":
        form = "rewrite" if query.gold_rewrite else "conversation"
    if form == "rewrite":
        return query.gold_rewrite or query.query
    if form == "current" or not query.history:
        return query.query
    lines = [f"{'User' if m.role == USER else 'Assistant'}: {m.content}" for m in query.history]
    return "Conversation so far:\n" + "\n".join(lines) + f"\nCurrent question: {query.query}"


def build_case(query: ConversationalQuery, corpus: Corpus, doc_id: str, form: str) -> Case:
    i = corpus.position(doc_id)
    title, text = corpus.titles[i], corpus.texts[i]
    return Case(
        qid=query.qid,
        doc_id=doc_id,
        query=query_text(query, form),
        answers=tuple(query.answers),
        document=f"{title}\n{text}" if title else text,
    )


def _answers_block(answers: Sequence[str]) -> str:
    if not answers:
        return "(no reference answer is given: decide whether the passage fully answers the question itself)"
    return "\n".join(f"{n}. {a}" for n, a in enumerate(answers, 1))


def _inputs(case: Case, history: str | None) -> str:
    parts = [
        f"<query>\n{case.query}\n</query>",
        f"<answer>\n{_answers_block(case.answers)}\n</answer>",
        f"<doc>\n{case.document}\n</doc>",
    ]
    if history is not None:
        parts.append(f"<history>\n{history}\n</history>")
    return "\n".join(parts)


_RULES = (
    "Scope must match: a passage about one specific case does not support a general statement, and the reverse.",
    "The passage must carry the key content of the answer, in a context that does not contradict it.",
    "The passage must state the answer directly; inference, reasoning from the opposite or common knowledge do "
    "not count.",
    "Same concept, same intent, same scope and the same practical guidance; sharing a topic or some words is not "
    "enough.",
    "Judge only whether the passage gives complete information for an answer; extra material in it does not matter.",
    "Surface overlap (the same term appearing in both) is not support unless the meaning and guidance match.",
    "Do not judge whether an answer is correct, whether it fits the question, or whether the answers agree.",
    "Consider each answer on its own.",
)
ADJUDICATOR_RULES = 6  # the adjudicator gets the first six (seed Table 29)


def _guide(n_rules: int = len(_RULES)) -> str:
    return "<guide>\n" + "\n".join(f"{i}. {rule}" for i, rule in enumerate(_RULES[:n_rules], 1)) + "\n</guide>"


_REPLY_FORMAT = """Reply with one JSON object and nothing else:
{"reference": ["sentence quoted from the passage", ...], "reason": "your step-by-step reasoning and the justification of your decision, at most 100 words", "response": "yes or no"}"""


def stance_statement(relevant: bool) -> str:
    return f"{'Yes' if relevant else 'No'}. {YES_MEANING if relevant else NO_MEANING}"


def agent_messages(case: Case, me: str, other: str, history: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """Messages for debate agent ``me`` (e.g. "Agent A"). ``history`` = (speaker, statement) pairs:
    the two opening stances in round 1, the previous round's reasons and labels afterwards."""
    system = (
        f"You are {me}. You and another agent, {other}, work on the same task: decide whether a passage FULLY "
        f"answers a question with AT LEAST ONE of its reference answers. The question is in <query>, its answers "
        f"(numbered, there may be several) in <answer>, the passage in <doc>, and what you and {other} have "
        f"argued so far in <history>. Rules for the decision are in <guide>; follow them throughout the discussion."
    )
    shown = "\n".join(f"{speaker}{' (you)' if speaker == me else ''}: {statement}" for speaker, statement in history)
    user = "\n".join(
        [
            _inputs(case, shown),
            "",
            "First read the question and its answers until you know the core content of each answer. Then read the "
            f"passage. Go through the discussion history and engage with it critically, answering {other}'s points. "
            "Then decide whether the passage fully supports any one answer under every rule below.",
            _guide(),
            "Explain step by step how you read the passage and how you respond to the other agent's position; quote "
            "the sentences of the passage that decide the matter, if there are any, and end with a clear justification.",
            *_decision_lines(),
        ]
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _decision_lines() -> list[str]:
    """How a debate agent or the adjudicator states its decision (the same for both)."""
    return ['In "response" give your decision:', f"- yes: {YES_MEANING}", f"- no: {NO_MEANING}", "", _REPLY_FORMAT]


def adjudicator_messages(case: Case, history: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    system = (
        "You are the ADJUDICATOR who settles a disagreement. Two evaluator agents with opposing views could not "
        "agree whether a passage contains enough to fully establish AT LEAST ONE of the reference answers to a "
        "question. The answers are proposed responses to the question; the passage must give complete evidence for "
        "stating or checking at least one of them. You do not judge how good an answer is, only whether the "
        "passage grounds it."
    )
    shown = "\n".join(f"{speaker}: {statement}" for speaker, statement in history)
    user = "\n".join(
        [
            _inputs(case, shown),
            "",
            "Read the question and its answers until you know the core content of each answer, then read the passage. "
            "Summarise the position of each agent and weigh how well each one applied the rules below. Then decide "
            "yourself whether the passage fully supports any one answer under every rule.",
            _guide(ADJUDICATOR_RULES),
            "Explain step by step how you read the passage, how you weighed both agents' arguments and how you applied "
            "the rules, and end with a clear justification.",
            *_decision_lines(),
        ]
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def prefilter_messages(case: Case) -> list[dict[str, str]]:
    """One judge of the irrelevant-chunk filter (seed Table 17, App. E)."""
    text = "\n".join(
        [
            "Decide whether the DOCUMENT contains enough information to answer the QUERY with any of the ANSWERS.",
            "",
            f"QUERY: {case.query}",
            f"DOCUMENT: {case.document}",
            "ANSWERS:",
            _answers_block(case.answers),
            "",
            "Return true when the DOCUMENT supports at least one ANSWER, false when it supports none. No explanation.",
            "Reply exactly in this form:",
            '{"is_supported": true} or {"is_supported": false}',
        ]
    )
    return [{"role": "user", "content": text}]


@dataclass(frozen=True)
class Verdict:
    """One agent's (or the adjudicator's) decision in one round."""

    relevant: bool
    reason: str
    reference: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"response": "yes" if self.relevant else "no", "reason": self.reason, "reference": list(self.reference)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        return cls(
            relevant=data["response"] == "yes",
            reason=data.get("reason", ""),
            reference=tuple(data.get("reference") or ()),
        )

    def statement(self) -> str:
        """How this verdict appears in the next round's history: the label, then the reasoning."""
        return f"{'Yes' if self.relevant else 'No'}. {self.reason}"


def _yes_no(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().strip(".!*\"'").lower()
        if word in ("yes", "true", "relevant"):
            return True
        if word in ("no", "false", "irrelevant", "not relevant"):
            return False
    raise ValueError(f"'response' must be yes or no, got {value!r}")


# Restated to a judge whose reply could not be read (the client's repair turn).
VERDICT_FORMAT = (
    'one JSON object and nothing else: {"reference": ["sentence quoted from the passage", ...], '
    '"reason": "your reasoning, at most 100 words", "response": "yes" or "no"}'
)
SUPPORT_FORMAT = '{"is_supported": true} or {"is_supported": false}, and nothing else'


def parse_verdict(text: str) -> Verdict:
    """A debate or adjudication reply; raises ValueError (the client then asks again) when malformed."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise ValueError("reply is not a JSON object")
    lowered = {str(k).lower(): v for k, v in data.items()}
    if "response" not in lowered:
        raise ValueError("reply has no 'response'")
    relevant = _yes_no(lowered["response"])
    reason = lowered.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("reply has no 'reason'")
    reference = lowered.get("reference") or []
    if isinstance(reference, str):
        reference = [reference]
    if not isinstance(reference, list):
        raise ValueError("'reference' must be a list of sentences")
    return Verdict(relevant=relevant, reason=reason.strip(), reference=tuple(str(r) for r in reference))


def parse_support(text: str) -> bool:
    """A pre-filter reply ``{"is_supported": true|false}``; raises ValueError when malformed."""
    data = extract_json(text)
    if isinstance(data, dict):
        lowered = {str(k).lower(): v for k, v in data.items()}
        if "is_supported" in lowered:
            return _yes_no(lowered["is_supported"])
    raise ValueError("reply has no 'is_supported'")
