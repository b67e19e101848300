"""Query expansion with LLM-written pseudo-documents: how the retriever's query text is made from the current
question and the passages a model wrote for it (``--history query2doc | hyde | mugi``).

* ``query2doc`` (Wang et al. 2023): the question repeated ``QUERY2DOC_REPEATS`` times, then the passage; the
  paper repeats it for BM25 so the question's own terms keep their weight against a longer passage. The same
  text goes to dense models (the paper joins one question and the passage there; one text for every retriever
  keeps one result per strategy).
* ``hyde`` (Gao et al. 2023): the passage alone stands for the question. HyDE averages the embeddings of several
  passages and the question; mtrbench writes one passage and embeds it, so BM25 and dense models read the same.
* ``mugi`` (Zhang et al. 2024): every passage, after the question repeated so that it keeps a share of the terms:
  ``max(1, (passage words // question words) // MUGI_BETA)`` times, MuGI's adaptive repetition for BM25.
"""

from __future__ import annotations

QUERY2DOC, HYDE, MUGI = "query2doc", "hyde", "mugi"
EXPANSION_KINDS = (QUERY2DOC, HYDE, MUGI)
QUERY2DOC_REPEATS = 5
MUGI_BETA = 5
PASSAGE_SEPARATOR = "\n"  # between MuGI's passages in the stored text


def expanded_query(kind: str, question: str, passages: str) -> str:
    """The query text for ``kind`` from the bare question and the stored passage text."""
    if kind == QUERY2DOC:
        return " ".join([question] * QUERY2DOC_REPEATS + [passages])
    if kind == HYDE:
        return passages
    if kind == MUGI:
        question_words = max(1, len(question.split()))
        repeats = max(1, (len(passages.split()) // question_words) // MUGI_BETA)
        return " ".join([question] * repeats + passages.split(PASSAGE_SEPARATOR))
    raise ValueError(f"not an expansion kind: {kind}")
