"""Serialization: turn a conversational query into the text a retriever sees."""

from mtrbench.serialize.history import STRATEGY_NAMES, QueryFormat, Serialized, get_strategy
from mtrbench.serialize.truncate import TruncationStats, Truncator

__all__ = ["QueryFormat", "Serialized", "get_strategy", "STRATEGY_NAMES", "Truncator", "TruncationStats"]
