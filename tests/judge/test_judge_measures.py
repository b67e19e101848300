"""Generation measures (BLEU-1, ROUGE-L, CitRecall, CitPrec, TokenF1, EM): values computed independently,
by the libraries' own code or by hand, never read back from a previous run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_run import run_cli
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU

from mtrbench.data import load_task
from mtrbench.formats.generations import Generation, read_generations
from mtrbench.infra.errors import MtrbenchError
from mtrbench.judge.scoring import DEFAULT_MEASURES, generation_measures, score_generations
from mtrbench.measures import evaluate, parse, parse_measures
from mtrbench.measures.families.token_f1 import token_f1
from mtrbench.measures.generation import sentences, statements, unit_interval

GENERATIONS = Path(__file__).resolve().parents[1] / "data" / "generations-sample.jsonl"


def _no_marks(text: str) -> str:
    return " ".join(re.sub(r"\[[0-9, ]+\]", " ", text).split())


@pytest.fixture(scope="module")
def sample():
    return load_task("mtrbench-sample")


@pytest.fixture(scope="module")
def scored(sample):
    return score_generations(read_generations(GENERATIONS), sample, generation_measures(DEFAULT_MEASURES))


def test_bleu1_and_rougel_equal_the_libraries(sample, scored):
    references = {q.qid: q.answers[0] for q in sample.queries}
    rows = [json.loads(line) for line in GENERATIONS.read_text().splitlines()]
    bleu = BLEU(max_ngram_order=1, effective_order=True)
    rouge = rouge_scorer.RougeScorer(["rougeL"])
    assert scored.scored == [r["qid"] for r in rows]
    for row in rows:
        hyp, ref = _no_marks(row["answer"]), _no_marks(references[row["qid"]])
        got = scored.evaluation.per_query[row["qid"]]
        assert got["bleu_1"] == pytest.approx(bleu.sentence_score(hyp, [ref]).score / 100)
        assert got["rouge_l"] == pytest.approx(rouge.score(ref, hyp)["rougeL"].fmeasure)
    means = scored.means()
    assert means["bleu_1"] == pytest.approx(sum(scored.evaluation.values("bleu_1").values()) / 4)


def test_bleu1_by_hand_and_citation_marks_ignored():
    """Clipped unigram precision 5/6 (the x2, cat, on, mat; not sat), equal lengths so no brevity penalty."""
    qrels = {"q": {"d": 1}}
    g = {"q": Generation("q", "the cat sat on the mat [1]", ("d",))}
    ev = evaluate(
        qrels, {}, [parse("BLEU-1"), parse("ROUGE-L")], generations=g, references={"q": ("the cat is on the mat [7]",)}
    )
    assert ev.per_query["q"]["bleu_1"] == pytest.approx(5 / 6)
    # LCS "the cat on the mat" = 5 of 6 tokens each side
    assert ev.per_query["q"]["rouge_l"] == pytest.approx(5 / 6)


def test_citation_recall_and_precision_by_hand(scored):
    # statements (sentences) citing a gold passage / citations pointing to one, per turn of the fixture:
    # 1: [1][2] gold+other, [2] other, no mark -> recall 1/3, precision 1/3
    # 2: [1][2] gold+other, "[3]" after the full stop (beyond the 2 passages shown) -> 1/2, 1/3
    # 3: [1] gold, [1] gold -> 1, 1
    # 4: [1, 2] gold+other, no mark -> 1/2, 1/2
    recall = scored.evaluation.values("cit_recall")
    precision = scored.evaluation.values("cit_precision")
    assert recall == pytest.approx({"geo-01_1": 1 / 3, "geo-01_2": 1 / 2, "geo-01_3": 1.0, "geo-01_4": 1 / 2})
    assert precision == pytest.approx({"geo-01_1": 1 / 3, "geo-01_2": 1 / 3, "geo-01_3": 1.0, "geo-01_4": 1 / 2})
    assert scored.means()["cit_recall"] == pytest.approx((1 / 3 + 1 / 2 + 1 + 1 / 2) / 4)
    assert scored.means()["cit_precision"] == pytest.approx((1 / 3 + 1 / 3 + 1 + 1 / 2) / 4)


def test_citation_gold_follows_the_relevance_level(sample):
    """The sample's gold grades are 2: at rel=3 nothing is gold, so every citation is wrong."""
    s = score_generations(read_generations(GENERATIONS), sample, [parse("CitRecall(rel=3)"), parse("CitPrec(rel=2)")])
    assert set(s.evaluation.values("cit_recall_rel3").values()) == {0.0}
    assert s.evaluation.values("cit_precision_rel2")["geo-01_3"] == 1.0


def test_token_f1_and_exact_match_by_hand():
    qrels = {"a": {"d": 1}, "b": {"d": 1}, "c": {"d": 1}}
    g = {
        "a": Generation("a", "The Eiffel Tower, in Paris [1]."),
        "b": Generation("b", "an Apple!"),
        "c": Generation("c", ""),
    }
    refs = {"a": ("Eiffel tower Paris France", "Paris"), "b": ("apple",), "c": ("something",)}
    ev = evaluate(qrels, {}, [parse("TokenF1"), parse("EM")], generations=g, references=refs)
    # a: "eiffel tower in paris" vs "eiffel tower paris france": 3 common, P = R = 3/4 -> 0.75 (vs "paris": 0.4)
    assert ev.per_query["a"] == pytest.approx({"token_f1": 0.75, "exact_match": 0.0})
    assert ev.per_query["b"] == pytest.approx({"token_f1": 1.0, "exact_match": 1.0})
    assert ev.per_query["c"] == pytest.approx({"token_f1": 0.0, "exact_match": 0.0})


def test_measure_strings():
    assert [str(m) for m in parse_measures(["BLEU-1", "rouge-l", "citrecall", "EM", "f1"], [5, 10])] == [
        "BLEU-1",
        "ROUGE-L",
        "CitRecall",
        "EM",
        "TokenF1",
    ]
    with pytest.raises(MtrbenchError, match="takes no cutoff"):
        parse("BLEU-1@10")
    with pytest.raises(MtrbenchError, match="takes no relevance level"):
        parse("ROUGE-L(rel=2)")
    with pytest.raises(MtrbenchError, match="not a generation measure"):
        generation_measures(["nDCG@10"])


def test_metrics_listing_shows_generation_measures():
    proc = run_cli("metrics", "--json")
    rows = {r["family"]: r for r in json.loads(proc.stdout)}
    assert (rows["bleu"]["example"], rows["bleu"]["result_key"]) == ("BLEU-1", "bleu_1")
    assert (rows["cit_precision"]["example"], rows["cit_precision"]["result_key"]) == ("CitPrec", "cit_precision")
    assert rows["ndcg"]["result_key"] == "ndcg_at_10"


def test_turns_left_out_are_counted(sample, tmp_path):
    rows = [json.loads(line) for line in GENERATIONS.read_text().splitlines()]
    rows.append({"qid": "nowhere_1", "answer": "x"})
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = score_generations(read_generations(path), sample, [parse("TokenF1")])
    assert s.scored == [r["qid"] for r in rows[:4]]
    assert s.notes["generations for queries not in mtrbench-sample (test) (left out)"] == 1
    assert (
        s.notes["task turns with a gold passage but no generation (not scored)"]
        == sum(1 for q in sample.queries if q.has_positive) - 4
    )


@pytest.mark.parametrize(
    "line,needle",
    [
        ('{"qid": "geo-01_1"}', r"g\.jsonl:2 \(geo-01_1\): 'answer' must be a string"),
        ('{"qid": "geo-01_1", "answer": "x"}', r"g\.jsonl:2: query 'geo-01_1' has a second generation"),
        ('{"answer": "x"', r"g\.jsonl:2: not valid JSON"),
        ('{"qid": "geo-01_2", "answer": "x", "passages": "d1"}', r"g\.jsonl:2 \(geo-01_2\): 'passages' must be a list"),
    ],
)
def test_bad_generations_file_is_one_error_line(tmp_path, line, needle):
    path = tmp_path / "g.jsonl"
    path.write_text('{"qid": "geo-01_1", "answer": "ok"}\n' + line + "\n")
    with pytest.raises(MtrbenchError, match=needle):
        read_generations(path)
    proc = run_cli("judge", "run", str(path), "--task", "mtrbench-sample", "--output", str(tmp_path / "s.json"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert [l for l in proc.stderr.splitlines() if l.startswith("error:")] == [proc.stderr.strip()]


@pytest.mark.slow
def test_cli_results_json(tmp_path):
    out = tmp_path / "scores.json"
    proc = run_cli(
        "judge",
        "run",
        str(GENERATIONS),
        "--task",
        "mtrbench-sample",
        "--measures",
        "CitRecall,TokenF1",
        "--output",
        str(out),
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["measures"]["means"]["cit_recall"] == pytest.approx((1 / 3 + 1 / 2 + 1 + 1 / 2) / 4)
    assert data["per_turn"]["geo-01_3"]["cit_recall"] == 1.0 and set(data["per_turn"]) == {
        "geo-01_1",
        "geo-01_2",
        "geo-01_3",
        "geo-01_4",
    }


# --- conventions of the reference implementations (issue 25) ---------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Dr. Smith founded it in 1990 [1].",
        "The U.S. Army built it [1].",
        "It is approx. 3.5 km long [1].",
        "J. R. R. Tolkien wrote it [1].",
        "Some rivers, e.g. the Nile, flow north [1].",
    ],
)
def test_abbreviations_decimals_and_initials_stay_in_one_statement(answer):
    """One sentence each (by reading it): ALCE's sent_tokenize keeps it whole, so citation recall is 1.0."""
    assert statements(answer) == [answer]
    ev = evaluate(
        {"q": {"d": 1}}, {}, [parse("CitRecall"), parse("CitPrec")], generations={"q": Generation("q", answer, ("d",))}
    )
    assert ev.per_query["q"] == {"cit_recall": 1.0, "cit_precision": 1.0}


def test_citation_recall_counts_sentences_not_periods():
    """Two sentences by hand; the second cites a passage that is not gold: recall 1/2, precision 1/2
    (a split at "Dr." would give three statements and recall 1/3)."""
    answer = "Dr. Smith founded it in the U.S. in 1990 [1]. He sold it for approx. 2.5 million [2]."
    assert statements(answer) == [
        "Dr. Smith founded it in the U.S. in 1990 [1].",
        "He sold it for approx. 2.5 million [2].",
    ]
    ev = evaluate(
        {"q": {"gold": 1}},
        {},
        [parse("CitRecall"), parse("CitPrec")],
        generations={"q": Generation("q", answer, ("gold", "other"))},
    )
    assert ev.per_query["q"] == pytest.approx({"cit_recall": 1 / 2, "cit_precision": 1 / 2})


def test_sentences_still_split_and_trailing_marks_attach():
    assert statements("Paris is big [1]. Is it old? Yes! [2] It is.") == [
        "Paris is big [1].",
        "Is it old?",
        "Yes! [2]",
        "It is.",
    ]
    assert statements("It ended in the U.S. It grew [1].") == ["It ended in the U.S.", "It grew [1]."]


def test_statements_match_nltk_english_punkt_where_installed():
    """Where NLTK's English model is installed, its sent_tokenize (ALCE's splitter) cuts these the same way."""
    nltk = pytest.importorskip("nltk")
    text = "Dr. Smith founded it in 1990 [1]. The U.S. Army built it. J. R. R. Tolkien wrote 3.5 books. Is it old? Yes."
    try:
        expected = nltk.sent_tokenize(text)
    except LookupError:
        pytest.skip("NLTK's punkt_tab English model is not installed")
    assert sentences(text) == expected


def test_token_f1_precision_and_recall_differ_by_hand():
    """Predicted and gold of different lengths, so precision != recall (SQuAD: P = common/|pred|,
    R = common/|gold|, F1 = 2PR/(P+R))."""
    # "eiffel tower paris" vs "eiffel tower is in paris france": 3 common, P = 3/3, R = 3/6 -> F1 = 2/3
    assert token_f1("Eiffel Tower, Paris", "The Eiffel Tower is in Paris, France") == pytest.approx(2 / 3)
    # "paris in france" vs "paris": 1 common, P = 1/3, R = 1/1 -> F1 = 2 * (1/3) / (4/3) = 1/2
    assert token_f1("Paris, in France", "Paris") == pytest.approx(1 / 2)
    ev = evaluate(
        {"q": {"d": 1}},
        {},
        [parse("TokenF1")],
        generations={"q": Generation("q", "Eiffel Tower, Paris [1]")},
        references={"q": ("The Eiffel Tower is in Paris, France",)},
    )
    assert ev.per_query["q"]["token_f1"] == pytest.approx(2 / 3)


def test_token_f1_both_empty_is_zero_as_squad_v11():
    """SQuAD v1.1's f1_score returns 0 when no token is shared (num_same == 0), also when both sides
    normalize to nothing; its exact_match_score compares the normalized strings: "" == "" -> 1."""
    assert token_f1("The", "a") == 0.0 and token_f1("", "") == 0.0
    ev = evaluate(
        {"q": {"d": 1}},
        {},
        [parse("TokenF1"), parse("EM")],
        generations={"q": Generation("q", "The.")},
        references={"q": ("a",)},
    )
    assert ev.per_query["q"] == {"token_f1": 0.0, "exact_match": 1.0}


def test_identical_answer_scores_exactly_one():
    """sacrebleu gives an identical answer 1.0000000000000004 (floating point); mtrbench reports 1.0."""
    text = "The Eiffel Tower is in Paris, France, and it was built in 1889."
    assert BLEU(max_ngram_order=1, effective_order=True).sentence_score(text, [text]).score / 100 >= 1.0
    ev = evaluate(
        {"q": {"d": 1}},
        {},
        [parse(m) for m in DEFAULT_MEASURES],
        generations={"q": Generation("q", text + " [1]", ("d",))},
        references={"q": (text,)},
    )
    assert ev.per_query["q"]["bleu_1"] == 1.0
    assert ev.per_query["q"]["rouge_l"] == 1.0
    assert ev.per_query["q"]["token_f1"] == 1.0 and ev.per_query["q"]["exact_match"] == 1.0


def test_unit_interval_clips_rounding_only():
    assert unit_interval(1.0000000000000004, "x") == 1.0
    assert unit_interval(-1e-17, "x") == 0.0
    assert unit_interval(0.25, "x") == 0.25
    with pytest.raises(AssertionError, match="outside"):
        unit_interval(1.5, "BLEU-1 q")
    with pytest.raises(AssertionError, match="outside"):
        unit_interval(-0.01, "BLEU-1 q")
