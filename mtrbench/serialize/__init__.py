"""Serialization: turn a conversational query into the text a retriever sees."""

from mtrbench.serialize.history import QueryFormat, Serialized, get_strategy, STRATEGY_NAMES
from mtrbench.serialize.truncate import Truncator, TruncationStats

__all__ = ["QueryFormat", "Serialized", "get_strategy", "STRATEGY_NAMES", "Truncator", "TruncationStats"]
