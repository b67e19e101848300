"""The reply parsers' former home, kept so existing imports work: everything lives in ``mtrbench.llm.replies``."""

from mtrbench.llm.replies import (
    ExtractionError,
    extract_choice,
    extract_json,
    extract_line,
    extract_rating,
    extract_verdict,
    extract_yes_no,
)

__all__ = [
    "ExtractionError",
    "extract_choice",
    "extract_json",
    "extract_line",
    "extract_rating",
    "extract_verdict",
    "extract_yes_no",
]
