"""Stage 3, multi-agent dialogue generation (MTR-SUITE §4.3).

Per turn, in order: the questioner writes a stand-alone question for one of the documents it is shown
(the current one to drill down; up to three unused chunks of the current cluster for the start and a soft
switch; of another cluster for a hard switch), the responder answers it from that gold chunk alone, and the
polisher rewrites it into the casual follow-up the user actually types (coreference, ellipsis). The
stand-alone question is kept as the turn's rewrite.

Finished conversations are appended to ``conversations.log.jsonl`` one line each, flushed and synced;
a conversation cut short by a kill is never written, so a rerun requests exactly the conversations the
log does not hold (with the same plan digest). A conversation whose agent reply stays malformed after
the client's re-asks, or whose request fails, is logged as dropped with its reason and counted; every
malformed reply (redacted) is in its conversation's record, dropped or done.

A dropped conversation is tried again on a rerun, up to ``GenerateOptions.retry_dropped`` more times in
all: its agents are then asked with the seed moved by the try number (``DROPPED_SEED_STEP``), since the
same requests would get the same replies (the cache keeps the good ones, a deterministic server the bad).
After its last try it stays dropped and counted.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from tqdm.auto import tqdm

from mtrbench.formats.lines import read_log_records
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.infra.locking import held_lock, lock_path_for
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.client import ChatClient, ChatRequest, ChatResult
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.cost import price_for
from mtrbench.llm.hf_async import make_async_client
from mtrbench.synthesize import prompts
from mtrbench.synthesize.cost import SeedCostModel, estimate_synthesis
from mtrbench.synthesize.curate import Chunk
from mtrbench.synthesize.plan import DRILL, HARD, SOFT, START, ConversationPlan, PlanOptions, plan_conversations
from mtrbench.synthesize.stage import settings_digest, write_summary

LOG = "conversations.log.jsonl"
CANDIDATES_SHOWN = 3
DEFAULT_RETRY_DROPPED = 2
DROPPED_SEED_STEP = 1000  # a retried conversation's seeds: far from the re-asks' seed + 1, + 2
AGENT_NAMES = ("questioner", "responder", "polisher")

T = TypeVar("T")  # what a reply parses to


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


class DroppedConversation(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class ConversationTry:
    """One conversation's run: which try it is (0 the first) and the malformed replies met on the way."""

    plan: ConversationPlan
    number: int = 0
    malformed: list[dict[str, Any]] = field(default_factory=list)


class ConversationLog:
    """Append-only JSONL of finished (done or dropped) conversations; a line cut by a kill is ignored."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self, digest: str) -> tuple[dict[str, dict[str, Any]], int]:
        """The latest record per conversation (a retried one's last try), and the unreadable line count."""
        lines, unreadable = read_log_records(self.path)
        records = {str(r.get("conversation_id")): r for r in lines if r.get("plan_digest") == digest}
        return records, unreadable

    def tries(self, digest: str) -> Counter:
        """Conversation id -> records logged for it (each a finished try)."""
        lines, _ = read_log_records(self.path)
        return Counter(str(r.get("conversation_id")) for r in lines if r.get("plan_digest") == digest)

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        cut_short = self.path.is_file() and self.path.stat().st_size > 0 and not _ends_with_newline(self.path)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(("\n" if cut_short else "") + json.dumps(record, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


class ConversationRunner:
    """Runs one planned conversation through the three agents."""

    def __init__(self, clients: dict[str, ChatClient], chunks: dict[str, Chunk], clusters: list[list[str]]) -> None:
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
        result: ChatResult = await self.clients[agent].acomplete(
            ChatRequest(key=key, messages=messages, parse=parse, params=params, reply_format=reply_format)
        )
        attempt.malformed += [{"agent": agent, "key": key, **m.as_dict()} for m in result.malformed]
        if not result.ok:
            raise DroppedConversation(f"{agent}: {result.error}")
        return result.value

    async def run(self, attempt: ConversationTry) -> list[dict[str, Any]]:
        plan = attempt.plan
        cluster = plan.cluster
        hard_targets = list(plan.hard_clusters)
        used: set[str] = set()
        gold: str | None = None
        standalone_questions: list[str] = []
        dialogue: list[tuple[str, str]] = []  # (role, content) as the user and assistant said it
        turns = []
        for turn, move in enumerate(plan.moves, start=1):
            if move == HARD:
                cluster = hard_targets.pop(0)
            unused = [c for c in self.clusters[cluster] if c not in used]
            if move == DRILL or (move == SOFT and not unused):
                move, candidates = DRILL, [gold]
            else:
                candidates = unused[:CANDIDATES_SHOWN]
                if not candidates:
                    raise DroppedConversation(f"cluster {cluster} has no unused chunk for turn {turn}")
            shown = [self.chunks[c].text for c in candidates]
            key = f"{plan.conversation_id}/t{turn}"
            question = await self._ask(
                attempt,
                "questioner",
                f"{key}/questioner",
                [
                    {"role": "system", "content": prompts.QUESTIONER_SYSTEM},
                    {"role": "user", "content": prompts.questioner_user_message(move, shown, standalone_questions)},
                ],
                lambda text, n=len(shown): (  # noqa: B008 (binds this turn's count)
                    prompts.parse_question(text, n)
                ),
                prompts.QUESTION_FORMAT,
            )
            gold = candidates[question.position - 1]
            used.add(gold)
            history = [
                {"role": "user" if role == "user" else "assistant", "content": content} for role, content in dialogue
            ]
            answer = await self._ask(
                attempt,
                "responder",
                f"{key}/responder",
                [
                    {"role": "system", "content": prompts.RESPONDER_SYSTEM},
                    *history,
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
                    {"role": "user", "content": prompts.polisher_user_message(dialogue, question.text)},
                ],
                prompts.parse_polished,
                prompts.POLISHED_FORMAT,
            )
            standalone_questions.append(question.text)
            dialogue += [("user", polished), ("assistant", answer)]
            turns.append(
                {
                    "turn": turn,
                    "switch": move,
                    "cluster": cluster,
                    "gold_chunk": gold,
                    "standalone": question.text,
                    "question": polished,
                    "answer": answer,
                }
            )
        return turns


def plan_digest(agents: Agents, plan_options: PlanOptions, upstream: str) -> str:
    judges = {
        name: {"model": j.model, "temperature": j.temperature, "max_tokens": j.max_tokens, "extra_body": j.extra_body}
        for name, j in agents.items()
    }
    return settings_digest(
        {"cluster": upstream, "prompts": prompts.PROMPT_VERSION, "agents": judges, "plan": asdict(plan_options)}
    )


def _spent(clients: dict[str, ChatClient], model: SeedCostModel) -> float:
    total = 0.0
    for client in clients.values():
        prices = price_for(client.judge) or (model.input_miss_usd_per_mtok, model.output_usd_per_mtok)
        total += (client.usage.prompt_tokens * prices[0] + client.usage.completion_tokens * prices[1]) / 1_000_000
    return total


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
    log = ConversationLog(folder / LOG)
    done, unreadable = log.read(digest)
    tries = log.tries(digest)
    todo, retried, given_up = _todo(plans, done, tries, options.retry_dropped)
    estimate = estimate_synthesis(len(todo), options.plan.turns, options.cost_model)
    for line in estimate.lines():
        print(line)
    if len(done):
        print(f"  resuming: {len(done)} of {len(plans)} conversations already in {log.path}")
    if retried or given_up:
        print(
            f"  dropped on an earlier run: {len(retried)} tried again, {given_up} given up after "
            f"{1 + options.retry_dropped} tries (retry_dropped {options.retry_dropped})"
        )
    if unreadable:
        print(f"  note: {unreadable} unreadable line(s) in {log.path} ignored (a run killed mid-write)")
    for name, judge in agents.items():
        print(f"  {name}: model {judge.model}")
    if options.dry_run:
        _print_first_prompt(plans[0] if plans else None, chunks, clusters)
        print("dry run: nothing was sent")
        return None
    if options.max_cost_usd is not None and estimate.usd > options.max_cost_usd:
        raise UserInputError(
            f"estimated cost ${estimate.usd:.4f} exceeds --max-cost ${options.max_cost_usd:.4f}; "
            "lower --conversations or --turns, or raise --max-cost"
        )
    folder.mkdir(parents=True, exist_ok=True)
    clients = {name: make_async_client(judge, cache) for name, judge in agents.items()}  # hf:// runs in-process
    by_id = {c.chunk_id: c for c in chunks}
    runner = ConversationRunner(clients, by_id, clusters)
    stopped = False
    with held_lock(lock_path_for(log.path), purpose=f"synthesis log {log.path}"):
        attempts = [ConversationTry(plan, tries.get(plan.conversation_id, 0)) for plan in todo]
        stopped = asyncio.run(_run_all(runner, attempts, log, digest, clients, options, show_progress))
    done, _ = log.read(digest)
    dropped = Counter(r.get("reason_kind", "dropped") for r in done.values() if r.get("status") == "dropped")
    finished = sum(1 for r in done.values() if r.get("status") == "done")
    report = GenerateReport(
        planned=len(plans),
        finished=finished,
        dropped=dropped,
        requests_sent=sum(c.usage.requests for c in clients.values()),
        spent_usd=_spent(clients, options.cost_model),
        stopped_by_cost=stopped,
        retried=len(retried),
        given_up=given_up,
    )
    write_summary(
        folder,
        {"plan_digest": digest},
        {
            "planned": report.planned,
            "finished": report.finished,
            "dropped": dict(report.dropped),
            "requests_sent_last_run": report.requests_sent,
            "spent_usd_last_run": round(report.spent_usd, 6),
            "retried_last_run": len(retried),
            "given_up_after_retries": given_up,
            "stopped_by_max_cost": stopped,
            "complete": not stopped and finished + sum(dropped.values()) == len(plans),
        },
    )
    return report


def _todo(
    plans: list[ConversationPlan], done: dict[str, dict[str, Any]], tries: Counter, retry_dropped: int
) -> tuple[list[ConversationPlan], list[str], int]:
    """(plans to run: never tried, or dropped with tries left; ids of those retried; dropped ones given up)."""
    todo, retried, given_up = [], [], 0
    for plan in plans:
        record = done.get(plan.conversation_id)
        if record is None:
            todo.append(plan)
        elif record.get("status") == "dropped":
            if tries[plan.conversation_id] <= retry_dropped:
                todo.append(plan)
                retried.append(plan.conversation_id)
            else:
                given_up += 1
    return todo, retried, given_up


async def _run_all(
    runner: ConversationRunner,
    todo: list[ConversationTry],
    log: ConversationLog,
    digest: str,
    clients: dict[str, ChatClient],
    options: GenerateOptions,
    show_progress: bool,
) -> bool:
    width = max(1, min(c.judge.concurrency for c in clients.values()))
    slots = asyncio.Semaphore(width)
    bar = tqdm(total=len(todo), desc="Generate: conversations", unit="conv", disable=not show_progress)
    stopped = False

    async def one(attempt: ConversationTry) -> None:
        plan = attempt.plan
        try:
            turns = await runner.run(attempt)
            record = {"status": "done", "turns": turns}
        except DroppedConversation as dropped:
            kind = "malformed reply" if "unparseable" in dropped.reason else "request failed"
            record = {"status": "dropped", "reason": dropped.reason, "reason_kind": kind}
        finally:
            slots.release()
        log.append(
            {
                "conversation_id": plan.conversation_id,
                "plan_digest": digest,
                "cluster": plan.cluster,
                "moves": list(plan.moves),
                "try": attempt.number + 1,
                "malformed": attempt.malformed,
                "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                **record,
            }
        )
        bar.update(1)

    tasks = []
    try:
        for attempt in todo:
            await slots.acquire()
            if options.max_cost_usd is not None and _spent(clients, options.cost_model) >= options.max_cost_usd:
                stopped = True
                slots.release()
                break
            tasks.append(asyncio.create_task(one(attempt)))
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        bar.close()
        for client in clients.values():
            await client.aclose()
    if stopped:
        print(
            f"stopped: --max-cost ${options.max_cost_usd:.4f} reached; finished conversations are kept, "
            "rerun with a higher cap to continue"
        )
    return stopped


def _print_first_prompt(plan: ConversationPlan | None, chunks: list[Chunk], clusters: list[list[str]]) -> None:
    if plan is None:
        return
    by_id = {c.chunk_id: c for c in chunks}
    shown = [by_id[c].text for c in clusters[plan.cluster][:CANDIDATES_SHOWN]]
    print(f"--- first questioner prompt ({plan.conversation_id}, moves {' '.join(plan.moves)}) ---")
    print(prompts.QUESTIONER_SYSTEM)
    print(prompts.questioner_user_message(START, shown, []))


def finished_conversations(folder: Path, digest: str) -> list[dict[str, Any]]:
    done, _ = ConversationLog(folder / LOG).read(digest)
    return sorted((r for r in done.values() if r.get("status") == "done"), key=lambda r: r["conversation_id"])
