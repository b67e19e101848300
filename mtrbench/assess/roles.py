"""Which judge plays which part of DREAM: the two debate agents, the pre-filter judges, the adjudicator."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mtrbench.assess.dream import AGENT_A, AGENT_B
from mtrbench.assess.log import debate_settings
from mtrbench.infra.errors import UserInputError, closest
from mtrbench.llm.config import JudgeConfig


@dataclass
class Roles:
    """Which judge plays which part (names from the judges file)."""

    agent_a: JudgeConfig
    agent_b: JudgeConfig
    prefilter: list[JudgeConfig] = field(default_factory=list)  # empty: no pre-filter
    adjudicator: JudgeConfig | None = None

    def judges(self) -> list[JudgeConfig]:
        """Each judge once, even when it plays several parts."""
        seen: dict[str, JudgeConfig] = {}
        for judge in [self.agent_a, self.agent_b, *self.prefilter] + ([self.adjudicator] if self.adjudicator else []):
            seen.setdefault(judge.name, judge)
        return list(seen.values())

    def debate_settings(self, rounds: int) -> dict[str, Any]:
        """What a logged debate must match to be reused (see ``log.debate_settings``)."""
        return debate_settings({AGENT_A.name: self.agent_a, AGENT_B.name: self.agent_b}, rounds)

    def describe(self) -> dict[str, Any]:
        def who(judge):
            return {"name": judge.name, "model": judge.model}

        return {
            "agent_a": who(self.agent_a),
            "agent_b": who(self.agent_b),
            "prefilter": [who(j) for j in self.prefilter] or None,
            "adjudicator": who(self.adjudicator) if self.adjudicator else None,
        }


def pick_roles(
    judges: Sequence[JudgeConfig],
    agents: str | None,
    prefilter: bool,
    prefilter_judges: str | None,
    adjudicator: str | None,
) -> Roles:
    by_name = {j.name: j for j in judges}

    def named(text: str, what: str) -> list[JudgeConfig]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        for name in names:
            if name not in by_name:
                raise UserInputError(
                    f"{what}: no judge named '{name}'.{closest(name, by_name)} Judges: {', '.join(by_name)}"
                )
        return [by_name[n] for n in names]

    if not judges:
        raise UserInputError("no judge configured (--judges FILE or --llm-model MODEL)")
    pair = named(agents, "--agents") if agents else [judges[0]]
    if len(pair) not in (1, 2):
        raise UserInputError("--agents takes one judge (both agents) or two (Agent A, Agent B)")
    filters: list[JudgeConfig] = []
    if prefilter:
        if prefilter_judges:
            filters = named(prefilter_judges, "--prefilter-judges")
        elif len(judges) >= 3:
            filters = list(judges[:3])
        else:
            raise UserInputError(
                f"--prefilter uses three judges (DREAM App. E), the configuration has {len(judges)}: "
                "give a judges file with three, or name the ones to use with --prefilter-judges"
            )
    elif prefilter_judges:
        raise UserInputError("--prefilter-judges needs --prefilter")
    return Roles(
        agent_a=pair[0],
        agent_b=pair[-1],
        prefilter=filters,
        adjudicator=named(adjudicator, "--adjudicator")[0] if adjudicator else None,
    )
