"""The nugget judge's citation support recall (judge/nuggets/citations.py, docs/nuggets.md) averages over every
sentence of the answer, a sentence citing nothing counting 0, and the run's recall over every answer. Expected
values by hand. (CORAL's cit_recall has the same denominator; tests/judge/test_judge_measures.py checks it.)"""

from __future__ import annotations

import pytest

from mtrbench.formats.generations import Generation
from mtrbench.judge.nuggets.citations import answer_citations, answer_support, run_support

# three sentences: the first cites passage 1, the second cites nothing, the third cites passage 2
ANSWER = "The lake formed after the glacier retreated [1]. It is very old. Its depth is 212 metres [2]."
PASSAGES = ("doc-a", "doc-b")


def test_support_recall_counts_every_sentence():
    parts, cited = answer_citations("run", Generation("q1", ANSWER, PASSAGES))
    assert len(parts) == 3 and [(c.sentence, c.label, c.doc_id) for c in cited] == [
        (0, 1, "doc-a"),
        (2, 2, "doc-b"),
    ]
    labels = {cited[0].key: "full_support", cited[1].key: "partial_support"}
    support = answer_support(parts, cited, labels)
    # best weight per sentence: 1, 0 (cites nothing), 0.5 -> recall 1.5 / 3; precision over the two pairs 1.5 / 2
    assert support.recall == pytest.approx(0.5)
    assert support.precision == pytest.approx(0.75)
    # the run's recall is the mean over all answers, one citing nothing too (recall 0, no precision)
    silent = answer_support(*answer_citations("run", Generation("q2", "No citation here. None here either.")), {})
    assert (silent.recall, silent.precision) == (0.0, None)
    summary = run_support({"q1": support, "q2": silent})
    assert summary["recall"] == pytest.approx(0.25) and summary["precision"] == pytest.approx(0.75)
