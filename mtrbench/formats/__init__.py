"""File formats, apart from the datasets that use them: TREC qrels and runs, BEIR folders.

The bottom layer of the package: these modules import only ``mtrbench.infra.errors`` and ``mtrbench.infra.atomic``.
"""
