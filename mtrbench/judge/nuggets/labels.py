"""The labels of nugget evaluation, spelled as nuggetizer writes them."""

from __future__ import annotations

VITAL = "vital"
OKAY = "okay"
# nuggetizer writes "failed" for a nugget whose label it could not obtain: importance (the scorer) or assignment
# (the assigner). Its metrics count such a nugget as not vital / not supported, and so does mtrbench.
FAILED = "failed"
IMPORTANCES = (VITAL, OKAY, FAILED)

SUPPORT = "support"
PARTIAL_SUPPORT = "partial_support"
NOT_SUPPORT = "not_support"
ASSIGNMENTS = (SUPPORT, PARTIAL_SUPPORT, NOT_SUPPORT, FAILED)
# what an LLM may answer when asked (a "failed" label is written for an item it did not answer)
ASKED_ASSIGNMENTS = (SUPPORT, PARTIAL_SUPPORT, NOT_SUPPORT)
ASKED_IMPORTANCES = (VITAL, OKAY)

# TREC RAG 2024's support evaluation: how far a cited passage supports an answer sentence
FULL = "full_support"
PARTIAL = "partial_support"
NO = "no_support"
CITATION_SUPPORT = (FULL, PARTIAL, NO)
CITATION_WEIGHT = {FULL: 1.0, PARTIAL: 0.5, NO: 0.0}
