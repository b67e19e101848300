"""Next-utterance prediction (Sim4IA-Bench's framing): given the prefix of a real conversation, the simulator
writes the user's next message, compared with the real one

* by meaning: cosine similarity of the two messages' embeddings (a sentence-transformers encoder, the offline
  MiniLM by default);
* by effect: whether they retrieve the same relevant passages. With the real prefix as history, both messages are
  searched (eval's ``full`` strategy by default, ``--history``) and ``overlap@k = |R ∩ S_k ∩ T_k| / |R ∩ T_k|``, R the real turn's relevant
  passages, T_k the real message's top k, S_k the simulated one's; a turn whose real message finds no relevant
  passage in its top k has no overlap (counted apart).

The simulator knows the whole need (every question of the real conversation, as in ``simulate run``): the numbers
say how faithfully it phrases and orders a known need, not whether it could invent one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mtrbench.data.model import USER, ConversationalQuery, TaskData
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.failure_rate import JudgeFailures
from mtrbench.llm.stage import Stage, StageItem, StageLog, StageOptions, run_stage
from mtrbench.llm.types import ChatRequest, ChatRunner
from mtrbench.retrieve.base import Retriever
from mtrbench.retrieve.registry import alias
from mtrbench.serialize.history import QueryFormat, get_strategy
from mtrbench.simulate.needs import InformationNeed, needs_from_task
from mtrbench.simulate.profiles import Profile
from mtrbench.simulate.prompts import (
    PROMPT_VERSION,
    REPLY_FORMAT,
    Exchange,
    parse_user_reply,
    prompt_hash,
    user_messages,
)

STAGE = "simulate-predict"
LOG_NAME = "predict.jsonl"

Similarity = Callable[[Sequence[str], Sequence[str]], list[float]]  # pairwise cosine of two aligned lists


@dataclass(frozen=True)
class Prediction:
    qid: str
    real: str
    simulated: str | None  # None: the simulator failed on it
    cosine: float | None = None
    overlap: float | None = None


@dataclass(frozen=True)
class PredictOptions:
    folder: Path
    k: int = 10
    cache: ResponseCache | None = None
    yes: bool = False
    show_progress: bool = True


def exchanges_of(query: ConversationalQuery) -> list[Exchange]:
    """The real prefix as the simulator sees its own past turns."""
    messages = list(query.history)
    return [
        Exchange(m.content, messages[i + 1].content if i + 1 < len(messages) else None)
        for i, m in enumerate(messages)
        if m.role == USER
    ]


def predict_stage(task: TaskData, needs: Sequence[InformationNeed], judge: JudgeConfig) -> Stage:
    """One item per real turn after the first, of the needs' conversations."""
    by_id = {n.need_id: n for n in needs}
    items = []
    for query in task.queries:
        need = by_id.get(query.conversation_id)
        if need is None or not query.history:
            continue
        messages = user_messages(need, Profile(), exchanges_of(query))
        request = ChatRequest(key=query.qid, messages=messages, parse=parse_user_reply, reply_format=REPLY_FORMAT)
        items.append(StageItem(query.qid, request, {"prompt_hash": prompt_hash(messages)}, {"qid": query.qid}))
    return Stage(STAGE, judge, items, {"model": judge.model, "prompt": PROMPT_VERSION}, desc="next utterance",
                 kind="user simulator", unit="turns")  # fmt: skip


def predict(
    task: TaskData, judge: JudgeConfig, options: PredictOptions, limit: int | None, client: ChatRunner | None = None
) -> tuple[dict[str, str | None], JudgeFailures]:
    """qid -> the simulator's next message (None where it failed), and the failure count."""
    stage = predict_stage(task, needs_from_task(task, limit), judge)
    log = StageLog(options.folder / LOG_NAME, purpose="next-utterance log")
    outcome, _ = run_stage(stage, log, StageOptions(options.cache, yes=options.yes, show_progress=options.show_progress),
                           client=client)  # fmt: skip
    out: dict[str, str | None] = {}
    for item in stage.items:
        record = outcome.records.get(item.key)
        value = record.value if record is not None and record.ok else None
        out[item.key] = str(value.get("utterance") or "") if isinstance(value, dict) else None
    return out, outcome.failures()


def encoder_similarity(name: str) -> Similarity:
    """Pairwise cosine of a sentence-transformers encoder (an mtrbench alias, a local folder or a hub id)."""
    from sentence_transformers import SentenceTransformer  # loaded only when validation runs

    spec = alias(name)
    path = spec.model_id if spec is not None else name
    if path.startswith("package:"):
        path = str(importlib.import_module(path.split(":", 1)[1]).get_model_path())
    model = SentenceTransformer(path, device="cpu")

    def similarity(left: Sequence[str], right: Sequence[str]) -> list[float]:
        a = model.encode(list(left), convert_to_tensor=True)
        b = model.encode(list(right), convert_to_tensor=True)
        return [float(model.similarity(a[i : i + 1], b[i : i + 1])[0, 0]) for i in range(len(left))]

    return similarity


def relevant_overlap(real_top: Sequence[str], simulated_top: Sequence[str], relevant: set[str]) -> float | None:
    found = relevant & set(real_top)
    return len(found & set(simulated_top)) / len(found) if found else None


def score_predictions(
    task: TaskData,
    predicted: dict[str, str | None],
    similarity: Similarity,
    retriever: Retriever,
    k: int,
    history: str = "full",
) -> list[Prediction]:
    """Cosine and overlap@k of each prediction (a failed one gets neither)."""
    queries = {q.qid: q for q in task.queries}
    done = [qid for qid, text in predicted.items() if text]
    cosines = similarity([queries[q].query for q in done], [predicted[q] or "" for q in done]) if done else []
    strategy, fmt = get_strategy(history), QueryFormat()
    texts = []
    for qid in done:
        real = queries[qid]
        simulated = ConversationalQuery(
            real.qid, real.conversation_id, real.turn_id, real.history, predicted[qid] or ""
        )
        texts += [strategy(real, fmt).text(), strategy(simulated, fmt).text()]
    hits = retriever.search(texts, k) if texts else []
    out = {qid: Prediction(qid, queries[qid].query, None) for qid, text in predicted.items() if not text}
    for n, qid in enumerate(done):
        real_top = [task.corpus.ids[i] for i in hits[2 * n][0]]
        sim_top = [task.corpus.ids[i] for i in hits[2 * n + 1][0]]
        relevant = {d for d, g in queries[qid].qrels.items() if g > 0}
        out[qid] = Prediction(qid, queries[qid].query, predicted[qid], cosines[n],
                              relevant_overlap(real_top, sim_top, relevant))  # fmt: skip
    return [out[qid] for qid in predicted]
