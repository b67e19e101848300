"""Search: exact top-k over embeddings."""

from mtrbench.search.exact import exact_search

__all__ = ["exact_search"]
