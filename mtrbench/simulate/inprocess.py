"""An mtrbench system under test: a retriever and a history strategy, with an optional generator, assembled as
``rag`` assembles them (``build_retriever``, eval's history strategies, generate's answer prompt).

Each turn becomes a conversational query (its history is the session so far), is serialized by the strategy, cut
to the retriever's token limit as eval cuts it (``--truncate``, oldest history first by default) and searched over
the task's corpus. With a generator, the top ``passages`` are shown to it with generate's answer
prompt and its answer is the response (a failed generation is a failed turn); without one the response is the
top passage's text, as a search engine's first result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mtrbench.data.model import ConversationalQuery, Corpus
from mtrbench.generation.prompts import answer_messages, answer_prompt_hash
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.stage import Stage, StageItem, StageOptions, run_stages
from mtrbench.llm.types import ChatRequest, ChatRunner
from mtrbench.retrieve.base import Retriever
from mtrbench.serialize.history import HistoryStrategy, QueryFormat
from mtrbench.serialize.truncate import Truncator
from mtrbench.simulate.systems import Passage, SystemReply, SystemRequest, failed


@dataclass
class RetrieverSystem:
    retriever: Retriever  # already indexed over ``corpus``
    corpus: Corpus
    strategy: HistoryStrategy
    top_k: int = 10
    passages: int = 3  # shown to the generator
    generator: JudgeConfig | None = None
    client: ChatRunner | None = None  # the generator's
    truncate: str = "left"  # as eval's --truncate: the oldest history goes first when the query is too long

    def settings(self) -> dict[str, Any]:
        return {
            "kind": "mtrbench",
            "retriever": self.retriever.settings(),
            "history": self.strategy.name,
            "truncate": self.truncate,
            "top_k": self.top_k,
            "generator": self.generator.model if self.generator is not None else None,
            "passages": self.passages if self.generator is not None else None,
            "answer_prompt": answer_prompt_hash(_answer_history(self.strategy.name)) if self.generator else None,
        }

    def respond(self, request: SystemRequest) -> SystemReply:
        query = ConversationalQuery(
            qid=f"{request.session_id}_{request.turn}",
            conversation_id=request.session_id,
            turn_id=request.turn,
            history=request.history,
            query=request.utterance,
        )
        serialized = self.strategy(query, QueryFormat())
        truncate = Truncator(
            self.retriever.tokenizer, self.retriever.max_length, prompt=self.retriever.query_prompt, side=self.truncate
        )
        ids, scores = self.retriever.search([truncate(serialized)], self.top_k)[0]
        passages = tuple(Passage(self.corpus.ids[i], float(s)) for i, s in zip(ids, scores))
        texts = [self.corpus.document_text(i) for i in ids]
        if self.generator is None or self.client is None:
            return SystemReply(True, texts[0] if texts else "", passages)
        history = "\n".join(QueryFormat().line(m) for m in request.history)
        mode = _answer_history(self.strategy.name)
        messages = answer_messages(mode, request.utterance, texts[: self.passages], history if mode == "full" else "")
        key = f"{request.session_id}/answer/{request.turn}"
        item = StageItem(key, ChatRequest(key=key, messages=messages))
        stage = Stage("simulate-answer", self.generator, [item], {"model": self.generator.model}, kind="generator")
        # no log of its own: the session loop logs the whole reply; the cost was confirmed with the user's
        run = run_stages([stage], None, StageOptions(show_progress=False), clients={self.generator.name: self.client},
                         confirm=False)  # fmt: skip
        record = run.outcomes[0].records.get(key)
        if record is None or not record.ok or not isinstance(record.value, str):
            return failed(f"generator: {(record.error if record is not None else None) or 'no answer'}")
        return SystemReply(True, record.value.strip(), passages)


def _answer_history(strategy: str) -> str:
    """The generator sees the whole conversation unless the retriever reads the current question alone."""
    return "full" if strategy != "current" else "rewrite"
