"""MTR-PIPELINE (MTR-SUITE §4): turn any corpus into a conversational retrieval benchmark.

Stages, each writing into its own folder of the work directory and resumable from it:
``curate`` (read, strip, chunk, near-duplicate removal, quality filter), ``cluster`` (greedy traversal
clustering), ``generate`` (questioner, responder and polisher agents) and ``write`` (a native task folder
with its card and the seed's Table 2 statistics). ``pipeline.run_synthesis`` runs them in order.
"""
