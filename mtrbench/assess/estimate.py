"""Before any request: the upper-bound request list behind the cost estimate, and what --dry-run shows."""

from __future__ import annotations

from collections.abc import Sequence

from mtrbench.assess.dream import AGENT_A, AGENT_B, Debate
from mtrbench.assess.log import PairRecords
from mtrbench.assess.prompts import (
    Case,
    adjudicator_messages,
    agent_messages,
    parse_support,
    parse_verdict,
    prefilter_messages,
)
from mtrbench.assess.roles import Roles
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.cost import CostEstimate, estimate_cost
from mtrbench.llm.types import ChatRequest

# For the cost estimate of rounds after the first and of adjudication, whose history is not known yet.
_PLACEHOLDER_REASON = "x" * 600
STAGES = ("prefilter", "round 1", "later rounds", "adjudicator")


def requests_upper_bound(roles: Roles, rounds: int, work: list[tuple[Case, PairRecords]]) -> dict[str, dict]:
    """{judge name: {stage: requests}} for every request the work could need: all pairs pass the filter,
    debate every round and (with an adjudicator) reach it. Later rounds carry a placeholder history of
    typical length, since their real one is not known yet."""
    placeholder = [(AGENT_A.name, f"Yes. {_PLACEHOLDER_REASON}"), (AGENT_B.name, f"No. {_PLACEHOLDER_REASON}")]
    out: dict[str, dict] = {}

    def add(judge, stage, key, messages, parse):
        request = ChatRequest(key=key, messages=messages, parse=parse, want_json=True)
        out.setdefault(judge.name, {s: [] for s in STAGES})[stage].append(request)

    settings = roles.debate_settings(rounds)
    for case, entry in work:
        if entry.needs_prefilter(bool(roles.prefilter)):
            for judge in roles.prefilter:
                add(
                    judge,
                    "prefilter",
                    f"{case.qid} | {case.doc_id} | prefilter",
                    prefilter_messages(case),
                    parse_support,
                )
        debate = entry.needs_debate(settings)
        if debate:
            for n in range(1, rounds + 1):
                history = Debate(rounds).history() if n == 1 else placeholder
                for (agent, other), judge in zip(
                    ((AGENT_A, AGENT_B), (AGENT_B, AGENT_A)), (roles.agent_a, roles.agent_b)
                ):
                    add(
                        judge,
                        "round 1" if n == 1 else "later rounds",
                        f"{case.qid} | {case.doc_id} | {agent.name} | round {n}",
                        agent_messages(case, agent.name, other.name, history),
                        parse_verdict,
                    )
        if roles.adjudicator is not None and (debate or entry.needs_adjudication(roles.adjudicator.name)):
            history = (
                Debate.from_dicts(len(entry.debate["rounds"]), entry.debate["rounds"]).history()
                if entry.escalated and not debate
                else placeholder
            )
            add(
                roles.adjudicator,
                "adjudicator",
                f"{case.qid} | {case.doc_id} | adjudicator",
                adjudicator_messages(case, history),
                parse_verdict,
            )
    return out


def cost_estimates(
    by_judge: dict[str, dict], judges: Sequence[JudgeConfig], cache: ResponseCache | None
) -> list[tuple[JudgeConfig, CostEstimate]]:
    out = []
    for judge in judges:
        stages = by_judge.get(judge.name)
        if not stages:
            continue
        # a pre-filter reply is a few tokens, a debate or adjudication reply about 200
        parts = [
            estimate_cost(
                requests, judge, cache, **({"completion_tokens_per_request": 10} if stage == "prefilter" else {})
            )
            for stage, requests in stages.items()
            if requests
        ]
        usd = [e.usd for e in parts]
        out.append(
            (
                judge,
                CostEstimate(
                    n_requests=sum(e.n_requests for e in parts),
                    prompt_tokens=sum(e.prompt_tokens for e in parts),
                    completion_tokens=sum(e.completion_tokens for e in parts),
                    usd=None if any(u is None for u in usd) else sum(usd),
                    cached=sum(e.cached for e in parts),
                ),
            )
        )
    return out


def first_stage(roles: Roles, by_judge: dict[str, dict]) -> tuple[list, list]:
    """What --dry-run shows, as (requests, judges each is sent to): the pre-filter prompts when there is
    a pre-filter (each goes to every filter judge), else round 1 of the debate, else adjudication."""
    if roles.prefilter and by_judge.get(roles.prefilter[0].name, {}).get("prefilter"):
        return by_judge[roles.prefilter[0].name]["prefilter"], list(roles.prefilter)
    debate = [r for stages in by_judge.values() for r in stages["round 1"]]
    if debate:
        return debate, [roles.agent_a]
    return [r for stages in by_judge.values() for r in stages["adjudicator"]], [roles.adjudicator]
