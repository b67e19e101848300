"""LLM backend: OpenAI-compatible chat completions with retries, parsing, a response cache and cost accounting."""

from mtrbench.llm.cache import ResponseCache, request_key
from mtrbench.llm.client import ChatClient, ChatRequest, ChatResult, Usage
from mtrbench.llm.config import JudgeConfig, judge_from_flags, load_judges
from mtrbench.llm.cost import CostEstimate, confirm_cost, estimate_cost, print_dry_run
from mtrbench.llm.extract import ExtractionError, extract_choice, extract_json, extract_rating, extract_yes_no

__all__ = [
    "ChatClient", "ChatRequest", "ChatResult", "CostEstimate", "ExtractionError", "JudgeConfig", "ResponseCache",
    "Usage", "confirm_cost", "estimate_cost", "extract_choice", "extract_json", "extract_rating", "extract_yes_no",
    "judge_from_flags", "load_judges", "print_dry_run", "request_key",
]
