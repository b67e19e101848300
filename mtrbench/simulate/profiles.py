"""Behaviour profiles of a simulated user: recorded settings, part of a session's identity.

``cooperative|terse``: answers clarifying questions fully, or in as few words as will do; ``patient|impatient``:
how many turns the user gives the system before it gives up (``max_turns``); ``expert|novice``: the wording of
its questions (the domain's terms, or everyday words).
"""

from __future__ import annotations

from dataclasses import dataclass

from mtrbench.infra.errors import UserInputError

COOPERATION = ("cooperative", "terse")
PATIENCE = {"patient": 8, "impatient": 3}  # default turns before giving up
WORDING = ("expert", "novice")


@dataclass(frozen=True)
class Profile:
    cooperation: str = "cooperative"
    patience: str = "patient"
    wording: str = "expert"
    max_turns: int = PATIENCE["patient"]

    @property
    def name(self) -> str:
        return f"{self.cooperation},{self.patience},{self.wording}"

    def settings(self) -> dict[str, str | int]:
        return {"cooperation": self.cooperation, "patience": self.patience, "wording": self.wording,
                "max_turns": self.max_turns}  # fmt: skip


def parse_profile(spec: str, max_turns: int | None = None) -> Profile:
    """``cooperative,patient,expert`` (any order, any subset; the rest default); ``max_turns`` overrides the
    patience's own number of turns."""
    chosen: dict[str, str] = {}
    for word in (w.strip() for w in spec.split(",") if w.strip()):
        axis = next((a for a, names in _AXES.items() if word in names), None)
        if axis is None:
            known = ", ".join(n for names in _AXES.values() for n in names)
            raise UserInputError(f"--profile: unknown behaviour '{word}' (one of {known})")
        if axis in chosen:
            raise UserInputError(f"--profile: '{chosen[axis]}' and '{word}' are both {axis}")
        chosen[axis] = word
    patience = chosen.get("patience", "patient")
    turns = max_turns if max_turns is not None else PATIENCE[patience]
    if turns < 1:
        raise UserInputError(f"--max-turns must be at least 1, got {turns}")
    return Profile(chosen.get("cooperation", "cooperative"), patience, chosen.get("wording", "expert"), turns)


_AXES = {"cooperation": COOPERATION, "patience": tuple(PATIENCE), "wording": WORDING}
