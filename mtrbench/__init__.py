"""mtrbench: evaluation harness for multi-turn conversational retrieval and RAG.

    import mtrbench
    results = mtrbench.evaluate("minilm", "mtrbench-sample", history=["current", "full"])
    results[0].main_score

The names below load on first use, so ``import mtrbench`` (and ``mtrbench --version``) stays fast.
"""

import logging

from mtrbench.infra.errors import DataError, LLMError, ModelError, MtrbenchError, UserInputError

# A library logs and lets the application decide what to show: without a handler of the user's, mtrbench's
# warnings are not printed (Python's last-resort handler would put them on stderr). The command line shows
# them through mtrbench.infra.reporting.cli_output.
logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"

_LAZY = {
    "evaluate": "mtrbench.pipeline.api",
    "make_task": "mtrbench.data.python",
    "Result": "mtrbench.results.result",
    "QueryScores": "mtrbench.results.result",
    "RetrieverOptions": "mtrbench.retrieve.options",
    "build_retriever": "mtrbench.retrieve.builder",
    "Conversation": "mtrbench.models.protocols",
    "Encoder": "mtrbench.models.protocols",
    "ConversationEncoder": "mtrbench.models.protocols",
    "SearchRetriever": "mtrbench.models.protocols",
    "Rewriter": "mtrbench.models.protocols",
    "QueryFormat": "mtrbench.serialize.history",
    "run_rag": "mtrbench.pipeline.rag",
    "RagConfig": "mtrbench.pipeline.rag",
}

__all__ = ["__version__", "MtrbenchError", "UserInputError", "DataError", "ModelError", "LLMError", *_LAZY]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mtrbench' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
