"""The three agents' prompts, written for mtrbench after the seed's Tables 12-14 and App. A.8.

Each agent is recognisable by the first words of its system prompt (the test server relies on it).
Replies are parsed under the shared leniency policy (``mtrbench.llm.replies``); a reply that does not follow
the format is asked for again by the client (a repair turn restating ``*_FORMAT``, then another seed), then
the conversation is dropped and counted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mtrbench.llm.replies import ExtractionError, extract_line

PROMPT_VERSION = "synth-v1"  # part of every conversation's plan digest: a prompt change regenerates

QUESTIONER_SYSTEM = """You play the user of a chat assistant: a curious person exploring a subject.

You will see reference documents, each beginning with its [Document N] label. Write ONE question that:
1. can be answered directly by exactly one of the documents shown, and by no other;
2. sounds like something a person would type, and never mentions documents, passages or sources;
3. is self-contained: it names its subject explicitly instead of using "it", "they" or "that" for things said
   earlier (another step of the pipeline makes it conversational later);
4. does not repeat a question already asked in this conversation.

Begin your reply with the label of the document that answers it, then the question, on one line:
[Document N] your question"""

MOVE_INSTRUCTIONS = {
    "start": "This is the first question of the conversation. Ask about one of the documents below.",
    "drill": "Drill down: stay on the subject of your previous question and ask about another detail of the "
    "same document.",
    "soft": "Shift the topic a little, as someone following a link would: ask about a related subject in one of "
    "the documents below, not about the subject of your previous question.",
    "hard": "Change the subject abruptly, as someone starting an unrelated new inquiry in the same chat would: ask "
    "about one of the documents below and ignore the earlier topic entirely.",
}

RESPONDER_SYSTEM = """You are the assistant of a production chat application, answering with retrieved knowledge.

Think the question through step by step and give a detailed, complete and well-organised answer, as a helpful
assistant would: several sentences to a few paragraphs. Use only the information in the reference document; do
not add facts it does not contain. Never mention the document, passages or sources. If the question is ambiguous,
do not ask a clarifying question: take the most likely meaning and answer it."""

POLISHER_SYSTEM = """You rewrite the last user query of a dialogue so that it sounds like casual human chat.

Requirements for the rewritten query:
1. Naturalness: it reads like spontaneous speech, short and informal.
2. Conversational features: use pronouns and other referring expressions ("it", "they", "that one") for things
   already mentioned in the dialogue; leave out words the context makes obvious (ellipsis: "And in winter?"
   instead of repeating the whole question); casual openers such as "So", "And", "What about" are welcome.
3. Meaning preservation, the most important rule: the rewritten query asks for exactly the same information as the
   original. Add nothing, drop nothing the answer depends on, and keep it unambiguous given the dialogue. When the
   subject is new to the dialogue, keep its name.

Example.
Dialogue:
[USER]: What is the weather like in London today?
[ASSISTANT]: It is partly cloudy in London with a high of 15 degrees, and rain is possible this afternoon.
Query to rewrite: What is the weather forecast for Paris for today?
Rewritten: And how about Paris?

Reply with the rewritten query only."""


# Restated to an agent whose reply could not be read (the client's repair turn).
QUESTION_FORMAT = (
    "one line: the label of the document that answers your question, then the question, e.g. "
    '"[Document 2] When did the bridge open to traffic?"'
)
ANSWER_FORMAT = "the answer itself, a few sentences to a few paragraphs, with no preamble"
POLISHED_FORMAT = "the rewritten query alone, on one line, with no label and no quotes"


@dataclass(frozen=True)
class Question:
    position: int  # 1-based index into the documents shown
    text: str


_LABELLED = re.compile(
    r"^\s*\**\s*\[\s*(?:document|doc)?\s*#?\s*(\d+)\s*\]\s*\**\s*[:\-]?\s*(.+)$", re.IGNORECASE | re.DOTALL
)


def questioner_user_message(move: str, documents: list[str], previous_questions: list[str]) -> str:
    shown = "\n\n".join(f"[Document {i}] {text}" for i, text in enumerate(documents, start=1))
    asked = "\n".join(f"- {q}" for q in previous_questions) or "(none yet)"
    return (
        f"{MOVE_INSTRUCTIONS[move]}\n\nQuestions asked so far in this conversation:\n{asked}\n\n**Documents:**\n{shown}"
    )


def parse_question(text: str, n_documents: int) -> Question:
    match = _LABELLED.match(text.strip())
    if not match:
        raise ExtractionError("reply does not start with a [Document N] label")
    position = int(match.group(1))
    if not 1 <= position <= n_documents:
        raise ExtractionError(f"document {position} was not shown (1-{n_documents})")
    question = " ".join(match.group(2).split()).strip()
    if len(question) < 5:
        raise ExtractionError("empty question")
    return Question(position, question)


def responder_user_message(document: str, question: str) -> str:
    return f"**Reference document:**\n{document}\n\n**Question:** {question}"


def parse_answer(text: str) -> str:
    answer = text.strip()
    if len(answer) < 20:
        raise ExtractionError("answer too short")
    return answer


def polisher_user_message(dialogue: list[tuple[str, str]], query: str) -> str:
    lines = "\n".join(f"[{role.upper()}]: {content}" for role, content in dialogue) or "(the dialogue starts here)"
    return f"Dialogue:\n{lines}\nQuery to rewrite: {query}\nRewritten:"


_PREFIX = re.compile(
    r"^\s*(?:\*\*)?\s*(?:\[?rewritten(?: query)?\]?|rewrite(?: query)?)\s*:?\s*(?:\*\*)?\s*", re.IGNORECASE
)


_POLISHED_LABELS = r"rewritten(?:\s+query)?|rewrite(?:\s+query)?"


def parse_polished(text: str) -> str:
    """The rewritten query: the last ``Rewritten:`` line, or a reply of one line."""
    query = extract_line(text, _POLISHED_LABELS, "rewrite")
    query = _PREFIX.sub("", query).strip().strip('"').strip("“”").strip()
    if len(query) < 2:
        raise ExtractionError("empty rewrite")
    if len(query) > 400:
        raise ExtractionError("rewrite is not one short query")
    return query
