"""Stage 3, multi-agent dialogue generation (MTR-SUITE §4.3).

Per turn, in order: the questioner writes a stand-alone question for one of the documents it is shown
(the current one to drill down; up to three unused chunks of the current cluster for the start and a soft
switch; of another cluster for a hard switch), the responder answers it from that gold chunk alone, and the
polisher rewrites it into the casual follow-up the user actually types (coreference, ellipsis). The
stand-alone question is kept as the turn's rewrite.

The conversations are one stage of the LLM stage runner (``mtrbench.llm.stage``): one item per conversation,
asked through the three agents by ``Conversations.ask``. The runner appends each finished one to
``conversations.log.jsonl`` in its one record layout (flushed, under the log's lock); a conversation cut short
by a kill is never written, so a rerun requests exactly the conversations the log does not hold (with the same
plan digest). A log of the layout before (no ``key``) is read too. A conversation whose agent reply stays
malformed after the client's re-asks, or whose request fails, is logged as dropped with its reason and
counted; every malformed reply (redacted) is in its conversation's record, dropped or done.

A dropped conversation is tried again on a rerun, up to ``GenerateOptions.retry_dropped`` more times in
all: its agents are then asked with the seed moved by the try number (``DROPPED_SEED_STEP``), since the
same requests would get the same replies (the cache keeps the good ones, a deterministic server the bad).
After its last try it stays dropped and counted.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.infra.reporting import report
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.client import ChatClient
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.failure_rate import JudgeFailures, most_common
from mtrbench.llm.hf_async import AsyncHFClient, make_async_client
from mtrbench.llm.prices import price_for
from mtrbench.llm.stage import (
    JSONValue,
    ReplyFields,
    Stage,
    StageItem,
    StageLog,
    StageOptions,
    StageRecord,
    StageRun,
    arun_stages,
    combined_result,
    legacy_record,
)
from mtrbench.llm.types import ChatRequest, ChatResult
from mtrbench.synthesize import prompts
from mtrbench.synthesize.cost import SeedCostModel, estimate_synthesis
from mtrbench.synthesize.curate import Chunk
from mtrbench.synthesize.plan import DRILL, HARD, SOFT, START, ConversationPlan, PlanOptions, plan_conversations
from mtrbench.synthesize.workdir import settings_digest, write_summary

LOG = "conversations.log.jsonl"
STAGE = "synthesize"  # the log records' "stage"
CANDIDATES_SHOWN = 3
DEFAULT_RETRY_DROPPED = 2
DROPPED_SEED_STEP = 1000  # a retried conversation's seeds: far from the re-asks' seed + 1, + 2
AGENT_NAMES = ("questioner", "responder", "polisher")
REASON_CHARS = 160  # a dropped conversation's reason may quote a reply: the error line shows its start

T = TypeVar("T")  # what a reply parses to
Turn = dict[str, JSONValue]
AgentClient = ChatClient | AsyncHFClient


@dataclass(frozen=True)
class Agents:
    questioner: JudgeConfig
    responder: JudgeConfig
    polisher: JudgeConfig

    def items(self) -> list[tuple[str, JudgeConfig]]:
        return [(name, getattr(self, name)) for name in AGENT_NAMES]


@dataclass(frozen=True)
class GenerateOptions:
    plan: PlanOptions = field(default_factory=PlanOptions)
    cost_model: SeedCostModel = field(default_factory=SeedCostModel)
    max_cost_usd: float | None = None
    dry_run: bool = False
    retry_dropped: int = DEFAULT_RETRY_DROPPED  # reruns that try a dropped conversation again, in all


@dataclass
class GenerateReport:
    planned: int
    finished: int  # in the log with status done (this run or earlier)
    dropped: Counter  # reason -> conversations
    requests_sent: int
    spent_usd: float
    stopped_by_cost: bool
    retried: int = 0  # dropped conversations tried again by this run
    given_up: int = 0  # dropped conversations past --retry-dropped, left dropped
    failures: JudgeFailures | None = None  # the dropped conversations, for --max-failure-rate


class DroppedConversation(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class ConversationTry:
    """One conversation's run: which try it is (0 the first) and every agent's result on the way."""

    plan: ConversationPlan
    number: int = 0
    results: list[ChatResult] = field(default_factory=list)


@dataclass
class LoggedConversations:
    latest: dict[str, StageRecord]  # per conversation: its done record, else its last dropped try
    tries: Counter  # conversation id -> records logged for it (each a finished try)
    unreadable: int  # lines cut short by a kill, ignored


def conversation_log(folder: Path) -> StageLog:
    return StageLog(folder / LOG, purpose="synthesis log", legacy=_old_conversation_record)


def _old_conversation_record(raw: Mapping[str, JSONValue]) -> StageRecord | None:
    """A conversation record written before the one stage layout (it has no key): its id is its key, done is ok."""
    if "conversation_id" not in raw:
        return None
    return legacy_record(
        {**raw, "key": str(raw["conversation_id"]), "ok": raw.get("status") == "done", "error": raw.get("reason")}
    )


def read_conversations(folder: Path, digest: str) -> LoggedConversations:
    contents = conversation_log(folder).read()
    settings = {"plan_digest": digest}
    latest: dict[str, StageRecord] = {}
    tries: Counter = Counter()
    for record in contents.records:
        if record.matches(STAGE, settings):
            tries[record.key] += 1
            if record.key not in latest or not latest[record.key].ok:
                latest[record.key] = record
    return LoggedConversations(latest, tries, contents.unreadable_lines)


class ConversationRunner:
    """Runs one planned conversation through the three agents."""

    def __init__(self, clients: dict[str, AgentClient], chunks: dict[str, Chunk], clusters: list[list[str]]) -> None:
        self.clients = clients
        self.chunks = chunks
        self.clusters = clusters

    async def _ask(
        self,
        attempt: ConversationTry,
        agent: str,
        key: str,
        messages: list[dict[str, str]],
        parse: Callable[[str], T],
        reply_format: str,
    ) -> T:
        params: dict[str, Any] = {}
        if attempt.number:
            seed = self.clients[agent].judge.extra_body.get("seed")
            params["seed"] = (seed if isinstance(seed, int) else 0) + DROPPED_SEED_STEP * attempt.number
        result = await self.clients[agent].acomplete(
            ChatRequest(key=key, messages=messages, parse=parse, params=params, reply_format=reply_format)
        )
        result.malformed = [replace(m, origin=(("agent", agent), ("key", key))) for m in result.malformed]
        attempt.results.append(result)
        if not result.ok:
            raise DroppedConversation(f"{agent}: {result.error}")
        return result.value

    async def run(self, attempt: ConversationTry) -> list[Turn]:
        plan = attempt.plan
        dialogue = Dialogue(plan.cluster, list(plan.hard_clusters))
        for turn, move in enumerate(plan.moves, start=1):
            await self._turn(attempt, dialogue, turn, move)
        return dialogue.turns

    async def _turn(self, attempt: ConversationTry, dialogue: Dialogue, turn: int, move: str) -> None:
        if move == HARD:
            dialogue.cluster = dialogue.hard_targets.pop(0)
        unused = [c for c in self.clusters[dialogue.cluster] if c not in dialogue.used]
        if move == DRILL or (move == SOFT and not unused):
            assert dialogue.gold is not None, "turn 1 is START: a drill-down follows a question"
            move, candidates = DRILL, [dialogue.gold]
        else:
            candidates = unused[:CANDIDATES_SHOWN]
            if not candidates:
                raise DroppedConversation(f"cluster {dialogue.cluster} has no unused chunk for turn {turn}")
        shown = [self.chunks[c].text for c in candidates]
        key = f"{attempt.plan.conversation_id}/t{turn}"
        question = await self._ask(
            attempt,
            "questioner",
            f"{key}/questioner",
            questioner_messages(move, shown, dialogue.standalone_questions),
            partial(prompts.parse_question, n_documents=len(shown)),
            prompts.QUESTION_FORMAT,
        )
        gold = candidates[question.position - 1]
        dialogue.gold = gold
        dialogue.used.add(gold)
        answer = await self._ask(
            attempt,
            "responder",
            f"{key}/responder",
            [
                {"role": "system", "content": prompts.RESPONDER_SYSTEM},
                *dialogue.history(),
                {"role": "user", "content": prompts.responder_user_message(self.chunks[gold].text, question.text)},
            ],
            prompts.parse_answer,
            prompts.ANSWER_FORMAT,
        )
        polished = await self._ask(
            attempt,
            "polisher",
            f"{key}/polisher",
            [
                {"role": "system", "content": prompts.POLISHER_SYSTEM},
                {"role": "user", "content": prompts.polisher_user_message(dialogue.said, question.text)},
            ],
            prompts.parse_polished,
            prompts.POLISHED_FORMAT,
        )
        dialogue.standalone_questions.append(question.text)
        dialogue.said += [("user", polished), ("assistant", answer)]
        dialogue.turns.append(
            {
                "turn": turn,
                "switch": move,
                "cluster": dialogue.cluster,
                "gold_chunk": gold,
                "standalone": question.text,
                "question": polished,
                "answer": answer,
            }
        )


@dataclass
class Dialogue:
    """A conversation so far: where it is in the clusters and what was said."""

    cluster: int
    hard_targets: list[int]  # the clusters the remaining hard switches go to, in order
    used: set[str] = field(default_factory=set)  # chunks already asked about
    gold: str | None = None  # the chunk the last question was about
    standalone_questions: list[str] = field(default_factory=list)
    said: list[tuple[str, str]] = field(default_factory=list)  # (role, content) as the user and assistant said it
    turns: list[Turn] = field(default_factory=list)

    def history(self) -> list[dict[str, str]]:
        return [{"role": "user" if role == "user" else "assistant", "content": content} for role, content in self.said]


def questioner_messages(move: str, shown: list[str], asked: list[str]) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": prompts.QUESTIONER_SYSTEM},
        {"role": "user", "content": prompts.questioner_user_message(move, shown, asked)},
    ]


class Conversations(ReplyFields):
    """The synthesis stage's items asked through the three agents (``ask``), and each conversation's record
    fields (called by the stage runner): done with its turns, or dropped with the reason."""

    def __init__(self, runner: ConversationRunner, plans: list[ConversationPlan], tries: Counter) -> None:
        self.runner = runner
        self.plans = {plan.conversation_id: plan for plan in plans}
        self.tries = tries
        self.turns: dict[str, list[Turn]] = {}  # a finished conversation's turns, until its record is made

    async def ask(self, stage: Stage, item: StageItem) -> ChatResult:
        attempt = ConversationTry(self.plans[item.key], self.tries.get(item.key, 0))
        error = None
        try:
            self.turns[item.key] = await self.runner.run(attempt)
        except DroppedConversation as dropped:
            error = dropped.reason
        return combined_result(item.key, attempt.results, None, error)

    def __call__(self, item: StageItem, result: ChatResult) -> dict[str, JSONValue]:
        if result.ok:
            return {"status": "done", "turns": list(self.turns.pop(item.key))}
        reason = result.error or "dropped"
        kind = "malformed reply" if "unparseable" in reason else "request failed"
        return {"status": "dropped", "reason": reason, "reason_kind": kind}


def plan_digest(agents: Agents, plan_options: PlanOptions, upstream: str) -> str:
    judges = {
        name: {"model": j.model, "temperature": j.temperature, "max_tokens": j.max_tokens, "extra_body": j.extra_body}
        for name, j in agents.items()
    }
    return settings_digest(
        {"cluster": upstream, "prompts": prompts.PROMPT_VERSION, "agents": judges, "plan": asdict(plan_options)}
    )


def _spent(clients: dict[str, AgentClient], model: SeedCostModel) -> float:
    total = 0.0
    for client in clients.values():
        prices = price_for(client.judge) or (model.input_miss_usd_per_mtok, model.output_usd_per_mtok)
        total += (client.usage.prompt_tokens * prices[0] + client.usage.completion_tokens * prices[1]) / 1_000_000
    return total


@dataclass
class Todo:
    """What a run asks: planned conversations never tried, or dropped with tries left."""

    plans: list[ConversationPlan]
    retried: list[str]  # ids of the dropped conversations tried again
    given_up: list[str]  # ids of the dropped conversations past retry_dropped (not asked, left dropped)


def run_generate(
    chunks: list[Chunk],
    clusters: list[list[str]],
    folder: Path,
    agents: Agents,
    options: GenerateOptions,
    upstream: str,
    cache: ResponseCache | None = None,
    show_progress: bool = True,
) -> GenerateReport | None:
    """Generate the planned conversations not yet in the log; None after a dry run (nothing sent)."""
    plans = plan_conversations(len(clusters), options.plan)
    if not plans:
        raise DataError("no clusters to generate conversations from")
    digest = plan_digest(agents, options.plan, upstream)
    logged = read_conversations(folder, digest)
    todo = _todo(plans, logged, options.retry_dropped)
    estimate = estimate_synthesis(len(todo.plans), options.plan.turns, options.cost_model)
    report("\n".join([*estimate.lines(), *_plan_lines(plans, logged, todo, agents, options, folder / LOG)]))
    by_id = {c.chunk_id: c for c in chunks}
    if options.dry_run:
        report(_first_prompt(plans[0], by_id, clusters))
        report("dry run: nothing was sent")
        return None
    if options.max_cost_usd is not None and estimate.usd > options.max_cost_usd:
        raise UserInputError(
            f"estimated cost ${estimate.usd:.4f} exceeds --max-cost ${options.max_cost_usd:.4f}; "
            "lower --conversations or --turns, or raise --max-cost"
        )
    folder.mkdir(parents=True, exist_ok=True)
    clients = {name: make_async_client(judge, cache) for name, judge in agents.items()}  # hf:// runs in-process
    conversations = Conversations(ConversationRunner(clients, by_id, clusters), plans, logged.tries)
    given_up = set(todo.given_up)
    stage = Stage(
        STAGE,
        agents.questioner,
        [_item(plan, logged.tries, by_id, clusters) for plan in plans if plan.conversation_id not in given_up],
        settings={"plan_digest": digest},
        desc="Generate: conversations",
        kind="agents",
        unit="conversations",
        reply_fields=conversations,
        also_asks=(agents.responder, agents.polisher),
    )
    run = asyncio.run(_ask_all(stage, conversation_log(folder), conversations, clients, options, show_progress))
    if run.stopped:
        report(
            f"stopped: --max-cost ${options.max_cost_usd:.4f} reached; finished conversations are kept, "
            "rerun with a higher cap to continue"
        )
    outcome = _outcome(folder, digest, plans, clients, options, todo, run.stopped)
    _write_generate_summary(folder, digest, outcome)
    return outcome


def _todo(plans: list[ConversationPlan], logged: LoggedConversations, retry_dropped: int) -> Todo:
    todo = Todo([], [], [])
    for plan in plans:
        record = logged.latest.get(plan.conversation_id)
        if record is None:
            todo.plans.append(plan)
        elif not record.ok:
            if logged.tries[plan.conversation_id] <= retry_dropped:
                todo.plans.append(plan)
                todo.retried.append(plan.conversation_id)
            else:
                todo.given_up.append(plan.conversation_id)
    return todo


def _plan_lines(
    plans: list[ConversationPlan],
    logged: LoggedConversations,
    todo: Todo,
    agents: Agents,
    options: GenerateOptions,
    log_path: Path,
) -> list[str]:
    """What the run will do besides the cost estimate: resuming, retries, a cut line, the agents' models."""
    lines = []
    if logged.latest:
        lines.append(f"  resuming: {len(logged.latest)} of {len(plans)} conversations already in {log_path}")
    if todo.retried or todo.given_up:
        lines.append(
            f"  dropped on an earlier run: {len(todo.retried)} tried again, {len(todo.given_up)} given up after "
            f"{1 + options.retry_dropped} tries (retry_dropped {options.retry_dropped})"
        )
    if logged.unreadable:
        lines.append(f"  note: {logged.unreadable} unreadable line(s) in {log_path} ignored (a run killed mid-write)")
    return lines + [f"  {name}: model {judge.model}" for name, judge in agents.items()]


def _first_request(plan: ConversationPlan, chunks: dict[str, Chunk], clusters: list[list[str]]) -> ChatRequest:
    """The questioner's request of a conversation's first turn (every plan starts with START), keyed by the
    conversation as its stage item is (the runner asks it through ``Conversations.ask``)."""
    shown = [chunks[c].text for c in clusters[plan.cluster][:CANDIDATES_SHOWN]]
    return ChatRequest(
        key=plan.conversation_id,
        messages=questioner_messages(START, shown, []),
        reply_format=prompts.QUESTION_FORMAT,
    )


def _first_prompt(plan: ConversationPlan, chunks: dict[str, Chunk], clusters: list[list[str]]) -> str:
    messages = _first_request(plan, chunks, clusters).messages
    header = f"--- first questioner prompt ({plan.conversation_id}, moves {' '.join(plan.moves)}) ---"
    return "\n".join([header, *(m["content"] for m in messages)])


def _item(plan: ConversationPlan, tries: Counter, chunks: dict[str, Chunk], clusters: list[list[str]]) -> StageItem:
    fields: dict[str, JSONValue] = {
        "conversation_id": plan.conversation_id,
        "cluster": plan.cluster,
        "moves": list(plan.moves),
        "try": tries[plan.conversation_id] + 1,
    }
    return StageItem(plan.conversation_id, _first_request(plan, chunks, clusters), fields=fields)


async def _ask_all(
    stage: Stage,
    log: StageLog,
    conversations: Conversations,
    clients: dict[str, AgentClient],
    options: GenerateOptions,
    show_progress: bool,
) -> StageRun:
    """The stage runner over the conversations, at most the agents' smallest concurrency in flight; under
    --max-cost no conversation starts once the spending reached it."""
    cap = options.max_cost_usd

    def under_cap() -> bool:
        return cap is None or _spent(clients, options.cost_model) < cap

    try:
        return await arun_stages(
            [stage],
            log,
            StageOptions(show_progress=show_progress),
            conversations.ask,
            concurrency=max(1, min(c.judge.concurrency for c in clients.values())),
            confirm=False,  # the seed's cost model was shown, and --max-cost checked, before
            keep_asking=under_cap,
        )
    finally:
        for client in clients.values():
            await client.aclose()


def _outcome(
    folder: Path,
    digest: str,
    plans: list[ConversationPlan],
    clients: dict[str, AgentClient],
    options: GenerateOptions,
    todo: Todo,
    stopped: bool,
) -> GenerateReport:
    """The log after the run: finished and dropped conversations (earlier runs' too), and this run's spending."""
    latest = read_conversations(folder, digest).latest
    dropped = [r for r in latest.values() if not r.ok]
    finished = len(latest) - len(dropped)
    reasons = [str(r.fields.get("reason") or r.fields.get("reason_kind") or "dropped")[:REASON_CHARS] for r in dropped]
    # a conversation a --max-cost stop left unstarted is a failure of the run, as the stage runner counts an item
    # it never asked: otherwise a stop after 1 of 10 conversations would read as 0 % failed
    unasked = sum(1 for plan in plans if plan.conversation_id not in latest)
    reasons += ["not answered (stopped by --max-cost)"] * unasked
    return GenerateReport(
        planned=len(plans),
        finished=finished,
        dropped=Counter(str(r.fields.get("reason_kind", "dropped")) for r in dropped),
        requests_sent=sum(c.usage.requests for c in clients.values()),
        spent_usd=_spent(clients, options.cost_model),
        stopped_by_cost=stopped,
        retried=len(todo.retried),
        given_up=len(todo.given_up),
        failures=JudgeFailures(
            "/".join(AGENT_NAMES),
            len(reasons),
            finished + len(reasons),  # every planned conversation: finished, dropped or never started
            most_common(reasons),
            kind="agents",
            unit="conversations",
        ),
    )


def _write_generate_summary(folder: Path, digest: str, outcome: GenerateReport) -> None:
    write_summary(
        folder,
        {"plan_digest": digest},
        {
            "planned": outcome.planned,
            "finished": outcome.finished,
            "dropped": dict(outcome.dropped),
            "requests_sent_last_run": outcome.requests_sent,
            "spent_usd_last_run": round(outcome.spent_usd, 6),
            "retried_last_run": outcome.retried,
            "given_up_after_retries": outcome.given_up,
            "stopped_by_max_cost": outcome.stopped_by_cost,
            "complete": not outcome.stopped_by_cost
            and outcome.finished + sum(outcome.dropped.values()) == outcome.planned,
        },
    )


def finished_conversations(folder: Path, digest: str) -> list[dict[str, Any]]:
    """The done conversations of the log (id and turns), in id order."""
    latest = read_conversations(folder, digest).latest
    done = [{"conversation_id": r.key, "turns": r.fields["turns"]} for r in latest.values() if r.ok]
    return sorted(done, key=lambda r: str(r["conversation_id"]))
