"""`mtrbench explore`: a static site to see why a system fails a turn (conversations list, one page per
conversation with each system's serialized query, top-k, measures and answers)."""
