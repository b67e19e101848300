"""Is a benchmark any good? Discriminative power, ranking stability and topic-set size (``mtrbench meta``)."""
