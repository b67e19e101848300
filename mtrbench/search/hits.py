"""What a search returns, for the searchers here and the retrievers built on them."""

# For each query: (corpus positions, scores), best first, at most top_k.
Hits = list[tuple[list[int], list[float]]]
