"""mtrbench: evaluation harness for multi-turn conversational retrieval and RAG."""

__version__ = "0.1.0"
