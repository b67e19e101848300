"""Search: exact top-k over embeddings (``search.exact``, which needs torch); ``search.hits`` is what it returns."""
