"""The in-process ``hf://`` backend re-asks malformed replies as ``ChatClient`` does, and ``--timeout`` bounds each
generation batch.

A tiny random-weight Llama (test_hf_everywhere's) says nothing predictable, so what a reply "is" is decided by the
test: parse functions that fail a chosen number of times per item, and, for the timeout, a logits processor that
forces each row's tokens and slows every step. What is sent is seen at the backend's ``generate_ids`` (the requests
of each batch) and at the model's ``generate`` (sampling and the seed it ran under).
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
import test_hf_everywhere
import torch
import transformers
from test_hf_everywhere import judge
from transformers import LogitsProcessor, LogitsProcessorList

from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.client import ChatRequest
from mtrbench.llm.hf import HFChatClient, _Rows
from mtrbench.llm.hf_async import AsyncHFClient
from mtrbench.llm.reask import REASK_TEMPERATURE, MalformedReply, is_repair_turn, repair_turn

tiny_model = test_hf_everywhere.tiny_model  # its module-scoped fixture: a tiny random Llama with a chat template

FORMAT = 'a last line "Rating: [[N]]"'


def failing(times: int, reason: str = "no rating found"):
    """A parse that rejects its first ``times`` replies (whatever they say) and accepts the next ones."""
    calls = [0]

    def parse(text: str) -> str:
        calls[0] += 1
        if calls[0] <= times:
            raise ValueError(reason)
        return f"parsed:{text}"

    return parse


def request(key: str, content: str, parse=None) -> ChatRequest:
    return ChatRequest(key=key, messages=[{"role": "user", "content": content}], parse=parse, reply_format=FORMAT)


@pytest.fixture
def batches(monkeypatch) -> list[list[ChatRequest]]:
    """The requests of each ``generate_ids`` call, in order."""
    seen: list[list[ChatRequest]] = []
    original = HFChatClient.generate_ids

    def recording(self, requests, on_reply=None):
        seen.append(list(requests))
        return original(self, requests, on_reply)

    monkeypatch.setattr(HFChatClient, "generate_ids", recording)
    return seen


@pytest.fixture
def sampling(monkeypatch) -> list[dict]:
    """For each ``model.generate``: do_sample, temperature and the torch seed it ran under."""
    seen: list[dict] = []
    original = transformers.LlamaForCausalLM.generate

    def recording(self, *args, **kwargs):
        seen.append(
            {
                "do_sample": kwargs.get("do_sample"),
                "temperature": kwargs.get("temperature"),
                "seed": torch.initial_seed(),
            }
        )
        return original(self, *args, **kwargs)

    monkeypatch.setattr(transformers.LlamaForCausalLM, "generate", recording)
    return seen


def test_a_malformed_reply_is_asked_again_with_a_repair_turn_and_the_success_cached_under_the_original(
    tiny_model, tmp_path, batches
):
    """Would fail if the re-ask repeated the identical request, quoted another text, lost the first reply from
    ``malformed``, counted attempts other than generations, or cached the reply under the re-ask's key."""
    cache = ResponseCache(tmp_path / "cache.sqlite")
    client = HFChatClient(judge(tiny_model), cache, device="cpu")
    original = request("q", "rate this answer please", failing(1))
    (result,) = client.run([original], show_progress=False)
    assert [len(b) for b in batches] == [1, 1]
    first, second = batches[0][0], batches[1][0]
    assert first.messages == original.messages
    (bad,) = result.malformed
    assert bad == MalformedReply(1, "no rating found", bad.text) and isinstance(bad.text, str)
    assert second.messages == [*original.messages, repair_turn(bad.text, "no rating found", FORMAT)]
    assert second.params == original.params  # the first re-ask changes only the conversation
    assert result.ok and result.attempts == 2 and result.value == f"parsed:{result.text}"
    assert (client.usage.requests, client.usage.items, client.usage.failures) == (2, 1, 0)
    assert cache.get(client.cache_key(original))["text"] == result.text
    assert cache.get(client.cache_key(second)) is None

    batches.clear()
    again = HFChatClient(judge(tiny_model), cache, device="cpu")
    (hit,) = again.run([request("q", "rate this answer please", failing(0))], show_progress=False)
    assert hit.cached and hit.ok and hit.attempts == 0 and hit.text == result.text
    assert batches == [] and again.usage.requests == 0


@pytest.mark.parametrize("seed", [None, 5])
def test_the_second_reask_changes_seed_and_temperature(tiny_model, batches, sampling, seed):
    """Greedy, then the repair turn (still greedy), then sampling at REASK_TEMPERATURE under seed (judge's seed or
    0) + 1, the repair turn quoting the latest reply. Would fail if the second re-ask were greedy again (the same
    reply for ever), if the seed never reached the sampler, or if the repair turn quoted the first reply."""
    extra = {} if seed is None else {"extra_body": {"seed": seed}}
    client = HFChatClient(judge(tiny_model, **extra), device="cpu")
    (result,) = client.run([request("q", "rate it", failing(2))], show_progress=False)
    assert result.ok and result.attempts == 3 and [m.attempt for m in result.malformed] == [1, 2]
    assert [s["do_sample"] for s in sampling] == [False, False, True]
    assert sampling[2]["temperature"] == REASK_TEMPERATURE
    assert sampling[2]["seed"] == (seed or 0) + 1
    third = batches[2][0]
    assert third.params["seed"] == (seed or 0) + 1 and third.params["temperature"] == REASK_TEMPERATURE
    assert is_repair_turn(third.messages[-1]) and len(third.messages) == 2  # one repair turn, not one per re-ask
    assert third.messages[-1] == repair_turn(result.malformed[1].text, "no rating found", FORMAT)


def test_sampling_is_seeded_by_the_requests_seed_and_leaves_the_global_state_alone(tiny_model):
    """The same seed gives the same sample, another seed another one; torch's own generator is not moved. Would
    fail if the seed were ignored (samples from the global state) or set globally for the rest of the process."""
    client = HFChatClient(judge(tiny_model, temperature=1.0, max_tokens=8), device="cpu")

    def sample(seed: int) -> list[int]:
        (ids,) = client.generate_ids(
            [ChatRequest(key="q", messages=[{"role": "user", "content": "x"}], params={"seed": seed})]
        )
        return ids

    torch.manual_seed(1234)
    before = torch.get_rng_state()
    assert sample(11) == sample(11)
    assert sample(11) != sample(12)
    assert torch.equal(torch.get_rng_state(), before)


def test_parse_retries_0_is_one_attempt(tiny_model, batches):
    """Would fail if re-asks ignored parse_retries."""
    client = HFChatClient(judge(tiny_model, parse_retries=0), device="cpu")
    (result,) = client.run([request("q", "rate it", failing(99))], show_progress=False)
    assert not result.ok and result.attempts == 1 and result.value is None
    assert result.error == "unparseable after 1 attempts: no rating found"
    assert [m.attempt for m in result.malformed] == [1] and result.text == result.malformed[0].text
    assert len(batches) == 1
    assert (client.usage.requests, client.usage.items, client.usage.failures) == (1, 1, 1)


def test_only_the_failed_rows_of_a_batch_are_asked_again_and_their_reasks_are_batched(tiny_model, batches, monkeypatch):
    """Four requests in one batch: two parse at once, one on its first re-ask, one never (parse_retries 2). Would
    fail if a parsed row were generated again, if re-asks went one by one, if an item were counted (results, bar,
    usage) more or less than once, or if a re-asked item's generations were not all counted."""
    ticks: list[int] = []

    class Bar:  # the progress bar: its total and every step it moves
        def __init__(self, total, initial, **kwargs):
            ticks.append(initial)
            self.total = total

        def update(self, n):
            ticks.append(n)

        def set_postfix(self, **kwargs):
            pass

        def close(self):
            pass

    monkeypatch.setattr("mtrbench.llm.hf.progress_bar", Bar)
    client = HFChatClient(judge(tiny_model, concurrency=4, parse_retries=2), device="cpu")
    requests = [
        request("ok1", "first question", failing(0)),
        request("once", "second question here", failing(1)),
        request("ok2", "third question, longer", failing(0)),
        request("never", "fourth question, the longest one", failing(99, "still no rating")),
    ]
    finished: list[str] = []
    results = client.run(requests, show_progress=True, on_result=lambda r: finished.append(r.key))
    per_key = Counter(r.key for batch in batches for r in batch)
    assert per_key == {"ok1": 1, "ok2": 1, "once": 2, "never": 3}
    assert [len(b) for b in batches] == [4, 2, 1]
    assert [r.key for r in results] == ["ok1", "once", "ok2", "never"]
    assert sorted(finished) == sorted(per_key) and ticks == [0, 1, 1, 1, 1]
    assert [r.attempts for r in results] == [1, 2, 1, 3]
    assert [r.ok for r in results] == [True, True, True, False]
    assert results[3].error == "unparseable after 3 attempts: still no rating"
    assert [len(r.malformed) for r in results] == [0, 1, 0, 3]
    assert (client.usage.requests, client.usage.items, client.usage.failures) == (7, 4, 1)


def test_the_async_adapter_hands_each_caller_its_reasked_result(tiny_model, batches):
    """Through ``acomplete`` the re-asks happen inside the batch's run: the caller gets the finished item."""
    import asyncio

    client = AsyncHFClient(judge(tiny_model, concurrency=2))

    async def ask():
        return await asyncio.gather(
            client.acomplete(request("a", "one", failing(1))), client.acomplete(request("b", "two", failing(0)))
        )

    first, second = asyncio.run(ask())
    assert (first.key, first.ok, first.attempts, second.key, second.ok, second.attempts) == ("a", True, 2, "b", True, 1)
    assert [len(b) for b in batches] == [2, 1]


class _Forced(LogitsProcessor):
    """Row 0 says token ``word`` then stops; every other row says ``word`` for ever. Each step sleeps ``step_s``."""

    def __init__(self, word: int, stop: int, width: int, step_s: float) -> None:
        self.word, self.stop, self.width, self.step_s = word, stop, width, step_s

    def __call__(self, input_ids, scores):
        time.sleep(self.step_s)
        forced = torch.full_like(scores, float("-inf"))
        forced[:, self.word] = 0.0
        if input_ids.shape[1] - self.width >= 1:
            forced[0, :] = float("-inf")
            forced[0, self.stop] = 0.0
        return forced


@pytest.fixture
def forced(monkeypatch, tiny_model):
    """Makes every ``generate`` of the tiny model follow ``_Forced``, 0.2 s a step."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    word = tokenizer.convert_tokens_to_ids("lake")
    original = transformers.LlamaForCausalLM.generate

    def slowed(self, *args, **kwargs):
        width = kwargs["input_ids"].shape[1]
        kwargs["logits_processor"] = LogitsProcessorList([_Forced(word, tokenizer.sep_token_id, width, 0.2)])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(transformers.LlamaForCausalLM, "generate", slowed)
    return tokenizer.decode([word])


def test_a_row_still_running_when_the_time_runs_out_fails_and_is_not_asked_again(tiny_model, forced, batches):
    """--timeout 1 s, 0.2 s a step, 40 tokens allowed: the shortest request (row 0 after the length sort) ends at its
    second step and keeps its reply; the two others are still talking at 1 s: each a timeout failure, no text, no
    second generation (parse_retries 2 notwithstanding). Would fail if the timeout were not enforced (the run
    would take 8 s and pass the 40-token texts off as replies), if a timed-out row were re-asked or if a finished
    row lost its reply with the batch."""
    client = HFChatClient(judge(tiny_model, timeout_s=1.0, max_tokens=40, concurrency=3, parse_retries=2), device="cpu")
    requests = [
        request("slow1", "a longer question here", failing(0)),
        request("fast", "hi", failing(0)),
        request("slow2", "the longest question of the three", failing(0)),
    ]
    started = time.monotonic()
    results = client.run(requests, show_progress=False)
    assert time.monotonic() - started < 4
    by_key = {r.key: r for r in results}
    assert by_key["fast"].ok and by_key["fast"].text == forced and by_key["fast"].attempts == 1
    for key in ("slow1", "slow2"):
        failed = by_key[key]
        assert not failed.ok and failed.text is None and failed.value is None and failed.malformed == []
        assert failed.attempts == 1
        assert failed.error == (
            "timeout: generation passed --timeout 1 s (in-process, not retried); raise --timeout "
            "(timeout_s in a judges file)"
        )
    assert len(batches) == 1
    assert (client.usage.requests, client.usage.items, client.usage.failures) == (3, 3, 2)


def test_rows_cut_at_the_token_limit_are_replies_even_when_time_runs_out_with_them():
    """The step that times the batch out may also be the one that reaches max_new_tokens: those rows are replies
    (cut at the limit, as without a timeout); shorter unfinished rows are the timed-out ones."""
    reported: list[tuple[int, list[int]]] = []
    rows = _Rows(1, {9}, lambda row, ids: reported.append((row, ids)))
    rows.step(torch.tensor([[1, 5, 9], [1, 5, 6], [1, 5, 6]]))  # row 0 ends
    rows.out_of_time = True
    ids = rows.finish(torch.tensor([[1, 5, 9], [1, 5, 6], [1, 5, 6]]), max_new_tokens=2)
    assert reported == [(0, [5]), (1, [5, 6]), (2, [5, 6])] and ids.timed_out == set()
    reported.clear()
    rows = _Rows(1, {9}, lambda row, ids: reported.append((row, ids)))
    rows.step(torch.tensor([[1, 9], [1, 5]]))
    rows.out_of_time = True
    ids = rows.finish(torch.tensor([[1, 9], [1, 5]]), max_new_tokens=2)
    assert reported == [(0, [])] and ids.timed_out == {1} and list(ids) == [[], [5]]
