"""The in-process ``hf://`` backend for async callers (``assess``'s debates, ``synthesize``'s agents).

Those callers await ``acomplete(request)`` once per request from many coroutines, as they do with
``ChatClient``. ``AsyncHFClient`` collects the requests that are waiting, runs them as one batch of
``HFChatClient.run`` in a worker thread (the event loop keeps running, so more requests queue meanwhile), and
resolves each caller's future with its own result. Batches are at most ``judge.concurrency`` requests. A reply
that does not parse is asked again inside that run (its re-asks batched with the batch's other failures), so a
caller's result comes when its item is finished, as from ``ChatClient.acomplete``; ``--timeout`` bounds each
generation batch as it does in ``HFChatClient``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.client import ChatClient, ChatRequest, ChatResult, Usage
from mtrbench.llm.config import JudgeConfig
from mtrbench.llm.hf import HFChatClient, is_hf_url


@dataclass
class _Waiting:
    request: ChatRequest
    future: asyncio.Future[ChatResult]


class AsyncHFClient:
    """``acomplete`` like ``ChatClient.acomplete``, over one in-process model."""

    def __init__(self, judge: JudgeConfig, cache: ResponseCache | None = None, *, device: str = "auto") -> None:
        self.judge = judge
        self.base_url = judge.base_url or ""
        self._backend = HFChatClient(judge, cache, device=device)
        self._waiting: list[_Waiting] = []
        self._worker: asyncio.Task[None] | None = None

    @property
    def usage(self) -> Usage:
        return self._backend.usage

    def cache_key(self, request: ChatRequest) -> str:
        return self._backend.cache_key(request)

    async def acomplete(self, request: ChatRequest) -> ChatResult:
        future: asyncio.Future[ChatResult] = asyncio.get_running_loop().create_future()
        self._waiting.append(_Waiting(request, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await future

    async def aclose(self) -> None:
        """Nothing to close (no connections); waits for a batch in progress."""
        if self._worker is not None and not self._worker.done():
            await asyncio.gather(self._worker, return_exceptions=True)

    async def _drain(self) -> None:
        while self._waiting:
            await asyncio.sleep(0)  # let the coroutines started with this one queue their requests first
            batch, self._waiting = (self._waiting[: self.judge.concurrency], self._waiting[self.judge.concurrency :])
            try:
                results = await asyncio.to_thread(self._backend.run, [w.request for w in batch], show_progress=False)
            except BaseException as err:  # a model that cannot load: every waiting caller gets the error
                for waiting in batch + self._waiting:
                    if not waiting.future.done():
                        waiting.future.set_exception(err)
                self._waiting = []
                if not isinstance(err, Exception):
                    raise
                return
            for waiting, result in zip(batch, results):
                if not waiting.future.done():
                    waiting.future.set_result(result)


def make_async_client(judge: JudgeConfig, cache: ResponseCache | None = None) -> AsyncHFClient | ChatClient:
    """The async-capable client for a judge: in-process for ``hf://`` base URLs, else the HTTP client."""
    if is_hf_url(judge.base_url):
        return AsyncHFClient(judge, cache)
    return ChatClient(judge, cache)
