"""MTR-EVAL judge prompts (MTR-SUITE Tables 15-18), one builder per audit dimension.

Each follows the seed's layout: task statement, a 1-5 rubric (or the pick-one instruction), one worked
example, then the instance. Replies end with ``Rating: N`` (1-5) or ``Document ID: [N]`` as in the seed.
The conversation before the question is shown as context, because follow-up questions ("when did it
open?") cannot be judged without it. The worked examples are invented.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mtrbench.data.model import USER, Message
from mtrbench.llm.replies import extract_choice, extract_rating

RATING_LOW, RATING_HIGH = 1, 5
NO_HISTORY = "(none: this is the first turn of the conversation)"


@dataclass(frozen=True)
class ShownDocument:
    title: str
    text: str

    def render(self, max_chars: int | None) -> str:
        body = f"{self.title}\n{self.text}" if self.title else self.text
        if max_chars and len(body) > max_chars:
            body = body[:max_chars].rstrip() + " [...]"
        return body


def render_history(history: Sequence[Message]) -> str:
    if not history:
        return NO_HISTORY
    return "\n".join(f"{'User' if m.role == USER else 'Assistant'}: {m.content}" for m in history)


def _user(content: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": content}]


RATING_FORMAT = (
    "Reply with a short justification first, then give your rating on the last line, exactly as "
    '"Rating: N" with N a whole number from 1 to 5.'
)

ALIGNMENT_TASK = """\
You are auditing the gold labels of a conversational search benchmark. The benchmark claims that the \
document below contains the answer to the user's current question. Read the conversation (context only: \
it tells you what pronouns and elliptical questions refer to), the document and the question, then rate \
how well the question can be answered from this document alone.

### Answerability scale
5 - Fully answerable: the document states the answer, or the answer follows directly from it, with no \
outside knowledge needed.
4 - Mostly answerable: the document answers the question, though a little common sense or minor outside \
knowledge would make the answer complete.
3 - Partially answerable: the document is on topic and covers part of the answer, but a substantial part \
has to come from elsewhere.
2 - Barely answerable: the document holds only slight or indirect information related to the question.
1 - Not answerable: the document does not help to answer the question, or is about something else.

### Worked example
Document:
The Halvard Observatory stands on Mount Keel at 2,140 metres. Its 1.8-metre reflector saw first light in \
1962 and is still used for surveys of variable stars.
Question: Who paid for the construction of the Halvard Observatory?
Justification: The document gives the site, the altitude and the telescope's history, but nothing about \
who funded the building, so the question cannot be answered from it.
Rating: 1
"""

COMPLETENESS_TASK = """\
You are given a user's question from a conversation and several candidate documents. Every document \
starts with its number in square brackets, for example [2]. Decide which one document is the most \
likely source of the answer to the current question. Use the conversation only to understand what the \
question refers to. You must choose exactly one document.

### Worked example
Documents:
[1] The Marrow Canal links the river Ost to the port of Selby. It was dug between 1788 and 1795 and has \
fourteen locks.
[2] Selby's harbour master keeps a log of every ship entering the port; the oldest surviving volume \
dates from 1802.
[3] The Marrow Canal was engineered by Agnes Pell, who also surveyed the route of the Ost towpath.
Question: Who engineered the Marrow Canal?
Justification: Only document [3] names the canal's engineer (Agnes Pell). Document [1] describes the \
canal's route and construction dates, and document [2] is about the harbour log; neither says who \
engineered it.
Document ID: [3]
"""

COMPLETENESS_FORMAT = (
    "Reply with a short justification first, then name your choice on the last line, exactly "
    'as "Document ID: [N]" with N the number of the document.'
)

FAITHFULNESS_TASK = """\
You are auditing the reference answers of a conversational search benchmark. Judge how faithfully the \
response below reflects the source document(s): every claim in it should be supported by them. The \
conversation and the question are context only; judge the response against the documents.

### Faithfulness scale
5 - Fully faithful: everything the response says is supported by the documents; nothing is added that \
the documents do not contain.
4 - Mostly faithful: the main claims are supported; a few minor details or rewordings are not stated \
explicitly but are reasonable inferences that contradict nothing.
3 - Partially faithful: the response mixes supported statements with significant ones that are \
unsupported by, or contradict, the documents.
2 - Mostly unfaithful: most of the response is unsupported or contradicts the documents; what overlaps \
is minor and the core message misrepresents the source.
1 - Not faithful: the response is unsupported, contradicts the documents, invents information, or has \
nothing to do with them.

### Worked example
Document:
The Marrow Canal links the river Ost to the port of Selby. It was dug between 1788 and 1795 and has \
fourteen locks.
Question: Tell me about the Marrow Canal.
Response: The Marrow Canal, finished in 1795, connects the Ost to Selby through fourteen locks and is \
today the busiest freight route in the region.
Justification: The completion year, the connection and the fourteen locks are all in the document. The \
claim that it is today the busiest freight route appears nowhere in it, a significant unsupported \
addition.
Rating: 3
"""

QUALITY_TASK = """\
You are auditing the reference answers of a conversational search benchmark. Judge how good the response \
is as an answer to the user's current question: is it correct, does it address every part of the \
question, is it relevant and clear? The documents and the conversation are there for context.

### Answer quality scale
5 - Excellent: factually correct, answers every part of the question, directly relevant and clear.
4 - Good: correct and answers the main parts well; it may miss a minor detail or be slightly unclear.
3 - Partial: answers some parts correctly but has significant omissions or errors elsewhere, or is \
correct but only loosely answers what was asked.
2 - Poor: significant factual errors, misses the core of the question, or is largely irrelevant.
1 - Inadequate: wrong, makes no attempt to answer, or is off-topic.

### Worked example
Document:
The Halvard Observatory stands on Mount Keel at 2,140 metres. Its 1.8-metre reflector saw first light in \
1962 and is still used for surveys of variable stars.
Question: Where is the Halvard Observatory and when did its telescope start observing?
Response: It is on Mount Keel.
Justification: The location is correct, but the second half of the question (first light in 1962) is not \
answered at all.
Rating: 3
"""


def _documents_block(documents: Sequence[ShownDocument], max_chars: int | None, numbered: bool) -> str:
    if numbered:
        return "\n\n".join(f"[{i}] {d.render(max_chars)}" for i, d in enumerate(documents, 1))
    if len(documents) == 1:
        return documents[0].render(max_chars)
    return "\n\n".join(f"Document {i}:\n{d.render(max_chars)}" for i, d in enumerate(documents, 1))


def alignment_messages(
    history: Sequence[Message], question: str, document: ShownDocument, max_doc_chars: int | None = None
) -> list[dict[str, str]]:
    return _user(
        f"{ALIGNMENT_TASK}\n### Now rate this instance with the same scale\n"
        f"Conversation so far:\n{render_history(history)}\n\n"
        f"Document:\n{_documents_block([document], max_doc_chars, numbered=False)}\n\n"
        f"Question: {question}\n\n{RATING_FORMAT}"
    )


def completeness_messages(
    history: Sequence[Message], question: str, candidates: Sequence[ShownDocument], max_doc_chars: int | None = None
) -> list[dict[str, str]]:
    return _user(
        f"{COMPLETENESS_TASK}\n### Now choose the most probable source for this instance\n"
        f"Conversation so far:\n{render_history(history)}\n\n"
        f"Documents:\n{_documents_block(candidates, max_doc_chars, numbered=True)}\n\n"
        f"Question: {question}\n\n{COMPLETENESS_FORMAT}"
    )


def _answer_messages(
    task: str,
    documents_label: str,
    history: Sequence[Message],
    question: str,
    answer: str,
    documents: Sequence[ShownDocument],
    max_doc_chars: int | None,
) -> list[dict[str, str]]:
    """The two answer dimensions share one layout: documents, question, the reference response, a rating."""
    return _user(
        f"{task}\n### Now rate this instance with the same scale\n"
        f"Conversation so far:\n{render_history(history)}\n\n"
        f"Document{'s' if len(documents) > 1 else ''}{documents_label}:\n"
        f"{_documents_block(documents, max_doc_chars, numbered=False)}\n\n"
        f"Question: {question}\n\nResponse: {answer}\n\n{RATING_FORMAT}"
    )


def faithfulness_messages(
    history: Sequence[Message],
    question: str,
    answer: str,
    documents: Sequence[ShownDocument],
    max_doc_chars: int | None = None,
) -> list[dict[str, str]]:
    return _answer_messages(FAITHFULNESS_TASK, "", history, question, answer, documents, max_doc_chars)


def quality_messages(
    history: Sequence[Message],
    question: str,
    answer: str,
    documents: Sequence[ShownDocument],
    max_doc_chars: int | None = None,
) -> list[dict[str, str]]:
    return _answer_messages(QUALITY_TASK, " (context)", history, question, answer, documents, max_doc_chars)


def parse_rating(text: str) -> float:
    """The 1-5 rating of a reply (the last labelled one: judges justify first, conclude last)."""
    return extract_rating(text, RATING_LOW, RATING_HIGH)


def choice_parser(n_options: int) -> Callable[[str], int]:
    """Reads "Document ID: [N]" (1-based) from a reply; a number outside 1..n_options is malformed."""

    def parse(text: str) -> int:
        return extract_choice(text, n_options)

    return parse
