"""Running the pending steps of each pair against the judges: pre-filter -> debate -> adjudication.

Each pair is one coroutine; a step's record is appended to the log the moment it ends, so a killed
run loses only the pairs in flight. The clients bound how many requests are in flight.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from mtrbench.assess.dream import AGENT_A, AGENT_B, AGENTS, Debate
from mtrbench.assess.log import AssessmentLog, PairRecords
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

if TYPE_CHECKING:
    from mtrbench.llm.client import ChatClient, ChatResult


class PairAssessor:
    """Runs the pending steps of pairs against the judges and logs each finished step."""

    def __init__(self, roles: Roles, clients: dict[str, ChatClient], log: AssessmentLog, rounds: int) -> None:
        self.roles = roles
        self.clients = clients
        self.log = log
        self.rounds = rounds
        self.settings = roles.debate_settings(rounds)

    async def _ask(self, judge, key: str, messages: list[dict[str, str]], parse, reply_format: str) -> ChatResult:
        from mtrbench.llm.client import ChatRequest

        return await self.clients[judge.name].acomplete(
            ChatRequest(key=key, messages=messages, parse=parse, want_json=True, reply_format=reply_format)
        )

    async def prefilter(self, case: Case) -> dict[str, Any]:
        results = await asyncio.gather(
            *(
                self._ask(
                    j,
                    f"{case.qid} | {case.doc_id} | prefilter | {j.name}",
                    prefilter_messages(case),
                    parse_support,
                    SUPPORT_FORMAT,
                )
                for j in self.roles.prefilter
            )
        )
        votes = {j.name: (r.value if r.ok else None) for j, r in zip(self.roles.prefilter, results)}
        errors = {j.name: r.error for j, r in zip(self.roles.prefilter, results) if not r.ok}
        if any(v is True for v in votes.values()):
            status = "kept"
        elif errors:  # not every judge said "irrelevant": undecided until the failed ones answer
            status = "failed"
        else:
            status = "discarded"
        record = {"kind": "prefilter", "qid": case.qid, "doc_id": case.doc_id, "status": status, "votes": votes}
        if errors:
            record["errors"] = errors
        _add_malformed(record, [(j.name, r) for j, r in zip(self.roles.prefilter, results)])
        return record

    async def debate(self, case: Case) -> dict[str, Any]:
        debate = Debate(self.rounds)
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
        record = {
            "kind": "debate",
            "qid": case.qid,
            "doc_id": case.doc_id,
            "status": "failed" if error else debate.state,
            "label": debate.label,
            "consensus_round": debate.consensus_round,
            **self.settings,
            "rounds": debate.rounds_as_dicts(),
        }
        if error:
            record["error"] = error
        _add_malformed(record, asked)
        return record

    async def adjudicate(self, case: Case, debate_record: dict[str, Any]) -> dict[str, Any]:
        judge = self.roles.adjudicator
        history = Debate.from_dicts(len(debate_record["rounds"]), debate_record["rounds"]).history()
        result = await self._ask(
            judge,
            f"{case.qid} | {case.doc_id} | adjudicator",
            adjudicator_messages(case, history),
            parse_verdict,
            VERDICT_FORMAT,
        )
        record = {
            "kind": "adjudication",
            "qid": case.qid,
            "doc_id": case.doc_id,
            "judge": judge.name,
            "status": "ok" if result.ok else "failed",
            "label": result.value.relevant if result.ok else None,
            "verdict": result.value.as_dict() if result.ok else None,
        }
        if not result.ok:
            record["error"] = result.error
        _add_malformed(record, [(judge.name, result)])
        return record

    async def assess(self, case: Case, entry: PairRecords) -> None:
        if entry.needs_prefilter(bool(self.roles.prefilter)):
            entry.prefilter = self._logged(await self.prefilter(case))
            if entry.prefilter["status"] != "kept":
                return
        if entry.needs_debate(self.settings):
            entry.debate = self._logged(await self.debate(case))
            entry.adjudication = None
        if entry.needs_adjudication(self.roles.adjudicator.name if self.roles.adjudicator else None):
            entry.adjudication = self._logged(await self.adjudicate(case, entry.debate))

    def _logged(self, record: dict[str, Any]) -> dict[str, Any]:
        self.log.append(record)
        return record


def _outcome(entry: PairRecords) -> str:
    """The pair's state for the progress bar."""
    if entry.adjudication is not None:
        return "adjudicated" if entry.adjudication["status"] == "ok" else "failed"
    if entry.debate is not None:
        status = entry.debate["status"]
        return "escalated" if status == "disagreement" else status
    if entry.prefilter is not None:
        return entry.prefilter["status"]
    return "open"


async def assess_all(
    assessor: PairAssessor, work: list[tuple[Case, PairRecords]], n_workers: int, show_progress: bool
) -> None:
    from tqdm.auto import tqdm

    queue: asyncio.Queue = asyncio.Queue()
    for item in work:
        queue.put_nowait(item)
    counts: Counter = Counter()
    bar = tqdm(
        total=len(work), desc="DREAM", unit="pair", disable=not show_progress, dynamic_ncols=True, file=sys.stderr
    )

    async def worker() -> None:
        while True:
            try:
                case, entry = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            await assessor.assess(case, entry)
            counts[_outcome(entry)] += 1
            bar.update(1)
            bar.set_postfix(dict(counts), refresh=False)

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, min(n_workers, len(work))))))
    finally:
        bar.close()
        await asyncio.gather(*(client.aclose() for client in assessor.clients.values()))


def _add_malformed(record: dict[str, Any], asked: list[tuple[str, ChatResult]]) -> None:
    """Every malformed reply met (redacted), under who gave it; nothing added when there was none."""
    malformed = [{"by": who, **m.as_dict()} for who, result in asked for m in result.malformed]
    if malformed:
        record["malformed"] = malformed
