"""The prompts of MTRAG's four LLM judges, in our own words, asking for the reply shapes the official readers
expect: RB_llm "Rating: [[n]]" on 1-10, idk_eval one word (yes / no / partial), underspecified_eval a JSON
``decision``, RL_F's two RAGAS steps JSON statements and JSON verdicts."""

from __future__ import annotations

import json
from collections.abc import Sequence

from mtrbench.formats.mtrag_eval import MtragTask

Messages = list[dict[str, str]]


def _user(text: str) -> Messages:
    return [{"role": "user", "content": text}]


def rb_llm_messages(task: MtragTask, answer: str) -> Messages:
    """RAD-Bench-style reference-guided rating of faithfulness, appropriateness and completeness."""
    earlier = "\n".join(f"{m.speaker}: {m.text}" for m in task.input[:-1]) or "(none: this is the first turn)"
    question = task.input[-1].text if task.input else ""
    documents = "\n\n".join(c.text for c in task.contexts) or "(no document)"
    reference = task.targets[0].text if task.targets else ""
    return _user(
        "You are grading one answer of an AI assistant in a multi-turn conversation that is grounded in documents.\n"
        "Judge only the answer to the latest user question, using the documents, the earlier turns and a "
        "reference answer written by a person. Weigh three things:\n"
        "- faithfulness: every claim of the answer is backed by the documents or the earlier turns;\n"
        "- appropriateness: the answer addresses what the latest question asks, and no more;\n"
        "- completeness: the answer gives the information from the documents that the question needs, as "
        "the reference answer does.\n"
        "Explain your judgement briefly, then give a score from 1 (worst) to 10 (best) on a last line written "
        "exactly as Rating: [[score]]\n\n"
        f"## Earlier turns\n{earlier}\n\n## Latest user question\n{question}\n\n"
        f"## Reference answer\n{reference}\n\n## Assistant's answer\n{answer}\n\n## Documents\n{documents}\n"
    )


def idk_messages(task: MtragTask, answer: str) -> Messages:
    """Does the answer say that it lacks the information to answer (yes), for part of it (partial), or not (no)?"""
    return _user(
        "Below are a conversation ending in a user request and an assistant's response to that request.\n"
        "Does the response state, wholly or in part, that there is not enough information to answer?\n"
        "Reply with a single word:\n"
        'yes - the response declines to answer because information is missing (e.g. "The documents do not say.");\n'
        "partial - the response says some of the request cannot be answered but answers the rest;\n"
        "no - the response answers without claiming missing information, even if it reasons or uses general "
        "knowledge.\n\n"
        "Conversation: What are the library's opening hours?\nResponse: It opens at 9 am and closes at 6 pm.\n"
        "Word: no\n\n"
        "Conversation: Who founded the company?\nResponse: Sorry, the passages do not mention its founder.\n"
        "Word: yes\n\n"
        "Conversation: How much does the plan cost and can I cancel it?\nResponse: It costs $10 a month; the "
        "text does not explain cancellation.\nWord: partial\n\n"
        f"Conversation: {task.conversation_text}\nResponse: {answer}\nWord:"
    )


def clarification_messages(answer: str) -> Messages:
    """Is the response asking the user for missing information (a clarification request)?"""
    return _user(
        "Decide whether the response below asks the user for clarification: its main purpose is to obtain "
        "information that is missing or ambiguous in the user's message. This includes direct questions "
        '("Which account do you mean?") and requests phrased as instructions ("Please tell me which '
        'version you use."). It excludes responses that only say they cannot answer, responses that mention '
        "what is missing without asking for it, and questions about something else.\n"
        'Reply with one JSON object and nothing else: {"decision": "yes" or "no", "explanation": '
        '"one short sentence"}\n\n'
        f"Response:\n{answer}\n"
    )


def statements_messages(question: str, answer: str) -> Messages:
    """RAGAS faithfulness step 1: the answer split into self-contained statements."""
    return _user(
        "Break the answer below into short statements, each one self-contained (no pronouns whose referent is "
        "outside the statement) and each stating one fact the answer asserts. An answer that asserts nothing "
        "(a refusal, a greeting) has no statements.\n"
        'Reply with JSON only: {"statements": ["...", "..."]}\n\n'
        f"Question:\n{question}\n\nAnswer:\n{answer}\n"
    )


def verdicts_messages(contexts: Sequence[str], statements: Sequence[str]) -> Messages:
    """RAGAS faithfulness step 2: for each statement, whether the context supports it (1) or not (0)."""
    return _user(
        "For each statement, decide whether it can be inferred directly from the context: verdict 1 if it can, "
        "0 if it cannot (contradicted or not mentioned). Give a one-sentence reason for each.\n"
        'Reply with JSON only: {"statements": [{"statement": "...", "reason": "...", "verdict": 0 or 1}, '
        "...]}, one entry per statement, in the same order.\n\n"
        f"Context:\n{chr(10).join(contexts)}\n\nStatements:\n{json.dumps(list(statements), ensure_ascii=False)}\n"
    )
