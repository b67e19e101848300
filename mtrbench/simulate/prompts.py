"""The simulated user's prompt (our own words) and how its reply is read.

The user model sees its need (the questions it wants answered, in order), its persona, its behaviour profile and
the conversation so far, and writes its next message. It ends the session by writing the marker ``[DONE]`` once
its need is met; a clarifying question of the system is answered from what the need and persona say.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from mtrbench.simulate.needs import InformationNeed
from mtrbench.simulate.profiles import Profile

PROMPT_VERSION = "simulate-user v2"
DONE = "[DONE]"
NO_ANSWER = "(the assistant did not answer)"

ROLE = (
    "You play a person talking to a search assistant. You want to find things out; you are not the assistant and "
    "you never answer your own questions. Write only your next message to the assistant, one or two sentences, "
    "with no quotation marks and no name in front of it."
)
GOAL = (
    "What you want to find out, in the order you would ask about it:\n{questions}\n"
    "Ask about one thing at a time and move on when the assistant has answered it. When every point has been "
    f"answered, or the assistant clearly cannot help, write {DONE} (alone, or after a short thank-you)."
)
PERSONA = "About you (use this only when it matters, e.g. to answer a question about yourself):\n{statements}"
CLARIFY = (
    "The assistant asked you a question. Answer it from what you want to find out and what you know about "
    "yourself; {cooperation}"
)
STYLES = {
    "cooperative": "give it everything it asks for.",
    "terse": "answer in as few words as will do.",
    "expert": "Word your messages like an expert in the topic, using its precise terms.",
    "novice": "Word your messages like a newcomer to the topic, in everyday words, without its jargon.",
    "patient": "",
    "impatient": "You are in a hurry: if an answer misses the point, say so bluntly.",
}
REPLY_FORMAT = f"your next message to the assistant as plain text, or {DONE} when you are done"


@dataclass(frozen=True)
class Exchange:
    """One turn as the user saw it: what it wrote and what came back (None: the system failed on it)."""

    utterance: str
    reply: str | None
    clarifying: bool = False


def system_prompt(need: InformationNeed, profile: Profile) -> str:
    parts = [ROLE, GOAL.format(questions="\n".join(f"- {q}" for q in need.questions))]
    if need.persona:
        parts.append(PERSONA.format(statements="\n".join(f"- {s}" for s in need.persona)))
    parts += [STYLES[profile.wording], STYLES[profile.patience]]
    return "\n\n".join(p for p in parts if p)


def user_messages(need: InformationNeed, profile: Profile, exchanges: Sequence[Exchange]) -> list[dict[str, str]]:
    """The request for the user's next message after ``exchanges`` (none: its opening message)."""
    if not exchanges:
        task = "Start the conversation: write your first question to the assistant, as the person described."
    else:
        lines = []
        for e in exchanges:
            lines += [f"You: {e.utterance}", f"Assistant: {e.reply if e.reply is not None else NO_ANSWER}"]
        last = exchanges[-1]
        then = (
            CLARIFY.format(cooperation=STYLES[profile.cooperation]) if last.clarifying else "Write your next message."
        )
        task = "The conversation so far:\n" + "\n".join(lines) + "\n\n" + then
    return [{"role": "system", "content": system_prompt(need, profile)}, {"role": "user", "content": task}]


def prompt_hash(messages: Sequence[dict[str, str]]) -> str:
    text = "\n\x00".join(f"{m['role']}\x01{m['content']}" for m in messages)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def parse_user_reply(text: str) -> dict[str, str | bool]:
    """``{"utterance": ..., "satisfied": ...}``; a reply with neither a message nor the marker is malformed."""
    satisfied = DONE in text
    utterance = " ".join(text.replace(DONE, " ").split())
    if utterance.lower().startswith(("you:", "user:")):  # a model that writes the transcript's speaker label
        utterance = utterance.split(":", 1)[1]
    utterance = utterance.strip().strip('"').strip()
    if not utterance and not satisfied:
        raise ValueError("an empty message")
    return {"utterance": utterance, "satisfied": satisfied}
