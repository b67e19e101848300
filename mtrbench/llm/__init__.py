"""LLM backend: OpenAI-compatible chat completions with retries, parsing, a response cache and cost accounting.

The names below load on first use: the client pulls in ``openai`` (seconds), which the CLI's parser must not wait
for.
"""

_LAZY = {
    "ResponseCache": "mtrbench.llm.cache",
    "request_key": "mtrbench.llm.cache",
    "ChatClient": "mtrbench.llm.client",
    "ChatRequest": "mtrbench.llm.types",
    "ChatResult": "mtrbench.llm.types",
    "Usage": "mtrbench.llm.types",
    "JudgeConfig": "mtrbench.llm.config",
    "judge_from_flags": "mtrbench.llm.config",
    "load_judges": "mtrbench.llm.config",
    "CostEstimate": "mtrbench.llm.cost",
    "confirm_cost": "mtrbench.llm.cost",
    "estimate_cost": "mtrbench.llm.cost",
    "print_dry_run": "mtrbench.llm.cost",
    "ExtractionError": "mtrbench.llm.extract",
    "extract_choice": "mtrbench.llm.extract",
    "extract_json": "mtrbench.llm.extract",
    "extract_rating": "mtrbench.llm.extract",
    "extract_yes_no": "mtrbench.llm.extract",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mtrbench.llm' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
