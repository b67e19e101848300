"""BERTScore through our batched scorer equals the bert-score library's own call, pair by pair (as the official
script calls it: one prediction and one reference per call, English, rescaled with a baseline), on a tiny
random-weight model: any plausible bug in pairing, batching, layer choice or rescaling changes the numbers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mtrbench.formats.mtrag_eval import Context, Message, MtragTask
from mtrbench.infra.errors import UserInputError
from mtrbench.judge.mtrag.algorithmic import algorithmic_metrics
from mtrbench.judge.mtrag.bertscore import BertScoreOptions, BertScorer

bert_score = pytest.importorskip("bert_score")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tiny_model import make_tiny_model  # noqa: E402

# a baseline per layer (LAYER,P,R,F) as bert-score's own files are laid out; values made up, not zero
BASELINE = "LAYER,P,R,F\n0,0.10,0.20,0.15\n1,0.30,0.25,0.28\n2,0.40,0.35,0.38\n"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bertscore")
    model = make_tiny_model(folder / "model")
    baseline = folder / "baseline.tsv"
    baseline.write_text(BASELINE)
    return str(model), str(baseline)


CANDIDATES = ["The library opens at nine on weekdays.", "Yes.", "I don't know the answer to that question."]
REFERENCES = [
    "You can visit the law library from 9 am, Monday to Friday.",
    "Yes, you can.",
    "The documents do not say.",
]


def test_batched_scores_equal_bert_score_called_pair_by_pair(tiny):
    model, baseline = tiny
    ours = BertScorer(BertScoreOptions(model=model, num_layers=1, baseline_path=baseline, batch_size=2))
    got = ours.precision_recall(CANDIDATES, REFERENCES)
    library = bert_score.BERTScorer(
        model_type=model, num_layers=1, lang="en", rescale_with_baseline=True, baseline_path=baseline
    )
    for (precision, recall), candidate, reference in zip(got, CANDIDATES, REFERENCES):
        p, r, _ = library.score([candidate], [reference])
        assert precision == pytest.approx(float(p[0]), abs=1e-5)
        assert recall == pytest.approx(float(r[0]), abs=1e-5)
    assert len({round(p, 6) for p, _ in got}) == 3  # the pairs are not all scored alike


def test_bertkprec_is_precision_against_each_passage_and_the_last_layer_is_the_default(tiny):
    model, _ = tiny
    task = MtragTask(
        task_id="t::1",
        input=(Message("user", "q"),),
        targets=(Message("agent", REFERENCES[0]),),
        contexts=(Context("d1", REFERENCES[1], 1.0), Context("d2", REFERENCES[2], 0.5)),
        predictions=(CANDIDATES[0],),
    )
    scorer = BertScorer(BertScoreOptions(model=model, rescale=False))
    assert scorer.resolved_layers() == 2  # not a model bert-score knows: its last layer
    metrics = algorithmic_metrics([task], ["BertscoreP", "BertscoreR", "BertKPrec"], scorer)[0]
    library = bert_score.BERTScorer(model_type=model, num_layers=2, lang="en")
    for reference, value in zip(REFERENCES[1:], metrics["BertKPrec"]):
        p, _, _ = library.score([CANDIDATES[0]], [reference])
        assert value == pytest.approx(float(p[0]), abs=1e-5)
    p, r, _ = library.score([CANDIDATES[0]], [REFERENCES[0]])
    assert metrics["BertscoreP"] == [pytest.approx(float(p[0]), abs=1e-5)]
    assert metrics["BertscoreR"] == [pytest.approx(float(r[0]), abs=1e-5)]


def test_rescaling_without_a_baseline_is_one_error_line(tiny):
    model, _ = tiny
    with pytest.raises(UserInputError, match="no rescaling baseline.*--bertscore-baseline"):
        BertScorer(BertScoreOptions(model=model)).check()
    BertScorer(BertScoreOptions()).check()  # the official model's baseline ships with bert-score
