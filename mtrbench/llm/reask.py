"""How a malformed reply is asked for again: never with the identical request.

Sending the same request again costs as much as the first and, at temperature 0 or with a fixed seed,
returns the same reply. So each re-ask changes what is sent:

1. the first re-ask is a repair turn: the original messages, then a user message that quotes the
   malformed reply, says why it could not be read and restates the exact format expected;
2. every further re-ask sends the same repair turn with a different seed (the original seed, or 0, plus
   the re-ask number) and, when the original temperature is 0 (where a seed changes nothing), temperature
   ``REASK_TEMPERATURE``.

The reply to a re-ask is the item's reply: it is parsed, scored and cached under the original request.
"""

from __future__ import annotations

from dataclasses import replace

from mtrbench.llm.types import ChatRequest, MalformedReply  # noqa: F401 (MalformedReply: importable here as before)

REASK_TEMPERATURE = 0.7
QUOTE_MAX_CHARS = 1500  # a runaway reply is quoted in part: the repair turn must not outgrow the context
GENERIC_FORMAT = "the exact reply format the instructions above ask for"
REPAIR_OPENING = "Your previous reply could not be read"


def _quoted(text: str | None) -> str:
    if text is None or not text.strip():
        return "(an empty reply)"
    shown = text if len(text) <= QUOTE_MAX_CHARS else text[:QUOTE_MAX_CHARS] + " [...]"
    return "\n".join(f"> {line}" for line in shown.splitlines())


def repair_turn(reply: str | None, reason: str, reply_format: str) -> dict[str, str]:
    """The user message appended to the original conversation for a re-ask."""
    expected = reply_format or GENERIC_FORMAT
    return {
        "role": "user",
        "content": (
            f"{REPAIR_OPENING} ({reason}). It was:\n{_quoted(reply)}\n\n"
            f"Answer the same request again. Your reply must follow exactly this format: {expected}"
        ),
    }


def is_repair_turn(message: dict[str, str]) -> bool:
    return message.get("role") == "user" and message.get("content", "").startswith(REPAIR_OPENING)


def without_repair(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The original conversation of a (re-asked) request: its messages before any repair turn."""
    return messages[:-1] if messages and is_repair_turn(messages[-1]) else messages


def reask_request(
    original: ChatRequest, reask: int, reply: str | None, reason: str, temperature: float | None, seed: int | None
) -> ChatRequest:
    """The request for re-ask number ``reask`` (1, 2, ...) after ``reply`` failed to parse for ``reason``.

    ``temperature``/``seed`` are the values the original request was sent with (None: not sent)."""
    messages = [*original.messages, repair_turn(reply, reason, original.reply_format)]
    params = dict(original.params)
    if reask >= 2:
        params["seed"] = (seed or 0) + reask - 1
        if not temperature:
            params["temperature"] = REASK_TEMPERATURE
    return replace(original, messages=messages, params=params)
