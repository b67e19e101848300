"""Running the pending steps of the pairs against the judges, as stages of the LLM stage runner: pre-filter ->
debate -> adjudication, one pass per step (``mtrbench.llm.stage.arun_stages``).

An item of a pass is one pair's step, asked through its own coroutine (a pre-filter asks three judges, a debate
several rounds of two agents) and logged as one record the moment it ends, so a killed run loses only the pairs in
flight. The runner asks an item only when the log has no ok record for it under the same settings (agents and
--rounds for a debate, the adjudicator and the debate for an adjudication). The clients bound how many requests are
in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mtrbench.assess.dream import AGENT_A, AGENT_B, AGENTS, Debate
from mtrbench.assess.log import (
    ADJUDICATION,
    DEBATE,
    PREFILTER,
    AssessmentLog,
    PairRecords,
    debate_id,
    debate_identity,
    step_key,
)
from mtrbench.assess.prompts import (
    SUPPORT_FORMAT,
    VERDICT_FORMAT,
    Case,
    adjudicator_messages,
    agent_messages,
    parse_support,
    parse_verdict,
    prefilter_messages,
)
from mtrbench.assess.roles import Roles
from mtrbench.llm.client import ChatClient
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.hf_async import AsyncHFClient
from mtrbench.llm.stage import (
    JSONValue,
    ReplyFields,
    Setting,
    Stage,
    StageItem,
    StageOptions,
    arun_stages,
    combined_result,
)
from mtrbench.llm.types import ChatRequest, ChatResult

AsyncClient = AsyncHFClient | ChatClient


class StepFields(ReplyFields):
    """A step's record fields (status, votes, rounds, verdict ...), left here by the coroutine that asked it."""

    def __init__(self) -> None:
        self.by_key: dict[str, dict[str, JSONValue]] = {}

    def __call__(self, item: StageItem, result: ChatResult) -> dict[str, JSONValue]:
        return self.by_key.pop(item.key, {})


@dataclass
class PairAssessor:
    """Asks the steps of pairs against the judges; one coroutine per step of a pair."""

    roles: Roles
    clients: dict[str, AsyncClient]
    rounds: int
    cases: dict[str, Case] = field(default_factory=dict)  # by step key
    debates: dict[str, dict[str, Any]] = field(default_factory=dict)  # by adjudication key: the debate to settle
    fields: StepFields = field(default_factory=StepFields)

    @property
    def settings(self) -> dict[str, Any]:
        return self.roles.debate_settings(self.rounds)

    async def _ask(
        self, judge: JudgeConfig, key: str, messages: list[dict[str, str]], parse: Callable[[str], Any], reply: str
    ) -> ChatResult:
        request = ChatRequest(key=key, messages=messages, parse=parse, want_json=True, reply_format=reply)
        return await self.clients[judge.name].acomplete(request)

    async def prefilter(self, stage: Stage, item: StageItem) -> ChatResult:
        case, judges = self.cases[item.key], self.roles.prefilter
        results = await asyncio.gather(
            *(
                self._ask(
                    j, f"{case.qid} | {case.doc_id} | prefilter | {j.name}", prefilter_messages(case), parse_support,
                    SUPPORT_FORMAT,
                )
                for j in judges
            )
        )  # fmt: skip
        votes = {j.name: (r.value if r.ok else None) for j, r in zip(judges, results)}
        errors = {j.name: r.error for j, r in zip(judges, results) if not r.ok}
        if any(v is True for v in votes.values()):
            status = "kept"
        elif errors:  # not every judge said "irrelevant": undecided until the failed ones answer
            status = "failed"
        else:
            status = "discarded"
        fields: dict[str, Any] = {"status": status, "votes": votes, **({"errors": errors} if errors else {})}
        self.fields.by_key[item.key] = fields
        combined = combined_result(item.key, results, status == "kept", by=[j.name for j in judges])
        ok = status != "failed"  # one judge's "relevant" keeps the pair even when another failed
        return replace(
            combined,
            ok=ok,
            value=(status == "kept") if ok else None,
            error=None if ok else "; ".join(str(e) for e in errors.values()),
        )

    async def debate(self, stage: Stage, item: StageItem) -> ChatResult:
        case, debate = self.cases[item.key], Debate(self.rounds)
        judges = {AGENT_A.name: self.roles.agent_a, AGENT_B.name: self.roles.agent_b}
        error = None
        asked: list[tuple[str, ChatResult]] = []
        while (n := debate.next_round) is not None:
            history = debate.history()
            results = await asyncio.gather(
                *(
                    self._ask(
                        judges[agent.name],
                        f"{case.qid} | {case.doc_id} | {agent.name} | round {n}",
                        agent_messages(case, agent.name, other.name, history),
                        parse_verdict,
                        VERDICT_FORMAT,
                    )
                    for agent, other in ((AGENT_A, AGENT_B), (AGENT_B, AGENT_A))
                )
            )
            asked += [(f"{agent.name} round {n}", r) for agent, r in zip(AGENTS, results)]
            failed = [(agent, r) for agent, r in zip(AGENTS, results) if not r.ok]
            if failed:
                error = "; ".join(f"{agent.name} round {n}: {r.error}" for agent, r in failed)
                break
            debate.add_round(results[0].value, results[1].value)
        fields: dict[str, Any] = {
            "status": "failed" if error else debate.state,
            "label": debate.label,
            "consensus_round": debate.consensus_round,
            **self.settings,
            "rounds": debate.rounds_as_dicts(),
        }
        self.fields.by_key[item.key] = fields
        return combined_result(item.key, [r for _, r in asked], debate.label, error, by=[who for who, _ in asked])

    async def adjudicate(self, stage: Stage, item: StageItem) -> ChatResult:
        judge, case, debate_record = stage.judge, self.cases[item.key], self.debates[item.key]
        history = Debate.from_dicts(len(debate_record["rounds"]), debate_record["rounds"]).history()
        result = await self._ask(
            judge,
            f"{case.qid} | {case.doc_id} | adjudicator",
            adjudicator_messages(case, history),
            parse_verdict,
            VERDICT_FORMAT,
        )
        self.fields.by_key[item.key] = {
            "status": "ok" if result.ok else "failed",
            "label": result.value.relevant if result.ok else None,
            "verdict": result.value.as_dict() if result.ok else None,
        }
        return combined_result(item.key, [result], result.value.relevant if result.ok else None, by=[judge.name])


def _step_item(kind: str, case: Case, request: ChatRequest, settings: dict[str, Setting] | None = None) -> StageItem:
    fields: dict[str, JSONValue] = {"kind": kind, "qid": case.qid, "doc_id": case.doc_id}
    return StageItem(step_key(case.qid, case.doc_id, kind), request, settings or {}, fields)


def _first_request(key: str, messages: list[dict[str, str]]) -> ChatRequest:
    """What the stage shows for an item (its first request); the coroutines send their own."""
    return ChatRequest(key=key, messages=messages, want_json=True)


@dataclass
class Passes:
    """The three passes over the pairs with work left, in order, each a stage of the runner."""

    assessor: PairAssessor
    log: AssessmentLog
    options: StageOptions
    concurrency: int

    async def run(self, work: Sequence[tuple[Case, PairRecords]]) -> None:
        """Each step of each pair that needs it, the pairs' records updated as each pass ends."""
        roles = self.assessor.roles
        going = list(work)
        if roles.prefilter:
            filtered = [(c, e) for c, e in going if e.needs_prefilter(True)]
            await self._pass(self._prefilter_stage(filtered), filtered, self.assessor.prefilter)
            stopped = {(c.qid, c.doc_id) for c, e in filtered if (e.prefilter or {}).get("status") != "kept"}
            going = [(c, e) for c, e in going if (c.qid, c.doc_id) not in stopped]
        debated = [(c, e) for c, e in going if e.needs_debate(self.assessor.settings)]
        await self._pass(self._debate_stage(debated), debated, self.assessor.debate)
        adjudicator = roles.adjudicator
        if adjudicator is not None:
            settled = [(c, e) for c, e in going if e.needs_adjudication(adjudicator.name)]
            await self._pass(self._adjudication_stage(adjudicator, settled), settled, self.assessor.adjudicate)

    async def _pass(
        self,
        stage: Stage,
        pairs: Sequence[tuple[Case, PairRecords]],
        ask: Callable[[Stage, StageItem], Awaitable[ChatResult]],
    ) -> None:
        if not pairs:
            return
        roles = self.assessor.roles
        run = await arun_stages(
            [stage],
            self.log.stage_log,
            self.options,
            ask,
            concurrency=self.concurrency,
            confirm=False,  # the upper bound over every pass was confirmed before the first
            also_asked=roles.judges(),
        )
        records = run.outcomes[0].records
        for case, entry in pairs:
            record = records.get(step_key(case.qid, case.doc_id, stage.name))
            if record is not None:
                setattr(entry, stage.name, record.to_json())
                if stage.name == DEBATE:
                    entry.adjudication = None  # an adjudication settles the debate before it

    def _stage(
        self, kind: str, asked: JudgeConfig, items: list[StageItem], label: str, settings: dict[str, Setting]
    ) -> Stage:
        return Stage(
            kind, asked, items, settings, desc=f"DREAM {label}", unit="pairs", reply_fields=self.assessor.fields
        )

    def _prefilter_stage(self, pairs: Sequence[tuple[Case, PairRecords]]) -> Stage:
        items = []
        for case, _ in pairs:
            key = step_key(case.qid, case.doc_id, PREFILTER)
            self.assessor.cases[key] = case
            items.append(_step_item(PREFILTER, case, _first_request(key, prefilter_messages(case))))
        return self._stage(PREFILTER, self.assessor.roles.prefilter[0], items, "pre-filter", {})

    def _debate_stage(self, pairs: Sequence[tuple[Case, PairRecords]]) -> Stage:
        items = []
        opening = Debate(self.assessor.rounds).history()
        for case, _ in pairs:
            key = step_key(case.qid, case.doc_id, DEBATE)
            self.assessor.cases[key] = case
            request = _first_request(key, agent_messages(case, AGENT_A.name, AGENT_B.name, opening))
            items.append(_step_item(DEBATE, case, request))
        identity = debate_identity(self.assessor.settings)
        return self._stage(DEBATE, self.assessor.roles.agent_a, items, "debate", identity)

    def _adjudication_stage(self, judge: JudgeConfig, pairs: Sequence[tuple[Case, PairRecords]]) -> Stage:
        items = []
        for case, entry in pairs:
            debate = entry.debate
            assert debate is not None, "only an escalated debate is adjudicated"
            key = step_key(case.qid, case.doc_id, ADJUDICATION)
            self.assessor.cases[key], self.assessor.debates[key] = case, debate
            history = Debate.from_dicts(len(debate["rounds"]), debate["rounds"]).history()
            request = _first_request(key, adjudicator_messages(case, history))
            items.append(_step_item(ADJUDICATION, case, request, {"debate": debate_id(debate)}))
        return self._stage(ADJUDICATION, judge, items, "adjudication", {"judge": judge.name})


async def assess_all(passes: Passes, work: Sequence[tuple[Case, PairRecords]]) -> None:
    """The passes over ``work``; the clients are closed at the end, also after an error."""
    try:
        await passes.run(work)
    finally:
        await asyncio.gather(*(client.aclose() for client in passes.assessor.clients.values()))
