"""TREC CAsT 2019/2020 loader: every topic turn a query, raw utterance + manual rewrite, graded qrels."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from cli_run import run_cli

from mtrbench.data import load_task
from mtrbench.data.cards import card_from_dict, get_card
from mtrbench.infra.errors import MtrbenchError


@pytest.fixture(scope="module")
def cast(shared) -> Path:
    return shared / "datasets/real/trec-cast"


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            qid, _, doc, grade = line.split()
            out.setdefault(qid, {})[doc] = int(grade)
    return out


def expected_turns(topics: list[dict]) -> list[dict]:
    out = []
    for topic in topics:
        previous = []
        for turn in topic["turn"]:
            out.append(
                {
                    "qid": f"{topic['number']}_{turn['number']}",
                    "conversation_id": str(topic["number"]),
                    "turn_id": turn["number"],
                    "query": turn["raw_utterance"].strip(),
                    "history": list(previous),
                    "turn": turn,
                }
            )
            previous.append(turn["raw_utterance"].strip())
    return out


def test_cast_2019_real_files(cast):
    folder = cast / "2019"
    task = load_task("trec-cast-2019", data_dir=cast, require_corpus=False)
    topics = json.loads((folder / "evaluation_topics_v1.0.json").read_text())
    with (folder / "evaluation_topics_annotated_resolved_v1.0.tsv").open(encoding="utf-8", newline="") as handle:
        rewrites = {qid: text for qid, text in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)}
    qrels = read_qrels(folder / "2019qrels.txt")
    expected = expected_turns(topics)
    assert len(task.queries) == len(expected) == sum(len(t["turn"]) for t in topics) == 479
    for q, e in zip(task.queries, expected):
        assert (q.qid, q.conversation_id, q.turn_id, q.query) == (
            e["qid"],
            e["conversation_id"],
            e["turn_id"],
            e["query"],
        )
        assert [m.content for m in q.history] == e["history"] and {m.role for m in q.history} <= {"user"}
        assert q.gold_rewrite == rewrites[q.qid].strip()
        assert q.qrels == qrels.get(q.qid, {})
    assert task.qrels() == qrels and len(qrels) == 173  # 20 judged topics
    assert {g for docs in qrels.values() for g in docs.values()} == {0, 1, 2, 3, 4}  # graded, kept as is
    assert len(task.corpus) == 0
    assert dict(task.warnings) == {"turns without qrels (kept, excluded from metrics)": 479 - 173}
    # hand-read: topic 31, turn 4
    q = task.queries[3]
    assert q.qid == "31_4" and q.query == "What are its symptoms?"  # published with a trailing space
    assert q.gold_rewrite == "What are lung cancer's symptoms?"
    assert q.meta["title"] == "head and neck cancer" and q.meta["topic"] == "31"


def test_cast_2020_real_files(cast):
    folder = cast / "2020"
    task = load_task("trec-cast-2020", data_dir=cast / "2020", require_corpus=False)
    manual = json.loads((folder / "2020_manual_evaluation_topics_v1.0.json").read_text())
    automatic = json.loads((folder / "2020_automatic_evaluation_topics_v1.0.json").read_text())
    auto_ids = {
        f"{t['number']}_{u['number']}": u["automatic_canonical_result_id"] for t in automatic for u in t["turn"]
    }
    qrels = read_qrels(folder / "2020qrels.txt")
    expected = expected_turns(manual)
    assert len(task.queries) == len(expected) == 216
    for q, e in zip(task.queries, expected):
        turn = e["turn"]
        assert (q.qid, q.turn_id, q.query, [m.content for m in q.history]) == (
            e["qid"],
            e["turn_id"],
            e["query"],
            e["history"],
        )  # no corpus: canonical responses left out
        assert q.gold_rewrite == turn["manual_rewritten_utterance"]
        assert q.meta["automatic_rewrite"] == turn["automatic_rewritten_utterance"]
        assert q.meta["manual_canonical_result_id"] == turn["manual_canonical_result_id"]
        assert q.meta["automatic_canonical_result_id"] == auto_ids[q.qid]
        assert q.qrels == qrels.get(q.qid, {})
    assert len(task.qrels()) == 208
    n_topics = len(manual)
    assert dict(task.warnings) == {
        "turns without qrels (kept, excluded from metrics)": 216 - 208,
        "canonical responses left out of histories (no corpus, or passage not in it)": 216 - n_topics,
    }


def _topic81_corpus(cast: Path, path: Path, skip: set[str] = frozenset()) -> dict[str, str]:
    """A TSV corpus of topic 81's judged passages and canonical results; MARCO ids without their prefix."""
    folder = cast / "2020"
    ids = {d for qid, docs in read_qrels(folder / "2020qrels.txt").items() if qid.startswith("81_") for d in docs}
    for name, key in (("automatic", "automatic_canonical_result_id"), ("manual", "manual_canonical_result_id")):
        topics = json.loads((folder / f"2020_{name}_evaluation_topics_v1.0.json").read_text())
        ids |= {u[key] for u in topics[0]["turn"]}
    texts = {d: f'passage {d} with "quotes" and NA' for d in sorted(ids) if d not in skip}
    path.write_text("".join(f"{d.removeprefix('MARCO_')}\t{t}\n" for d, t in texts.items()))
    return texts


@pytest.mark.parametrize("mode", ["automatic", "manual", "none"])
def test_cast_2020_canonical_responses_from_the_corpus(cast, tmp_path, mode):
    texts = _topic81_corpus(cast, tmp_path / "corpus.tsv")
    card = card_from_dict(
        {**get_card("trec-cast-2020").to_dict(), "loader_options": {"year": 2020, "canonical_responses": mode}},
        "x.yaml",
    )
    task = load_task(card, data_dir=cast / "2020", corpus_path=tmp_path / "corpus.tsv")
    assert len(task.corpus) == len(texts)
    topics = json.loads(
        (cast / f"2020/2020_{'manual' if mode == 'none' else mode}_evaluation_topics_v1.0.json").read_text()
    )
    turns = topics[0]["turn"]
    q = next(q for q in task.queries if q.qid == "81_3")
    expected = []
    for turn in turns[:2]:
        expected.append(("user", turn["raw_utterance"]))
        if mode != "none":
            expected.append(("assistant", texts[turn[f"{mode}_canonical_result_id"]]))
    assert [(m.role, m.content) for m in q.history] == expected
    # qrels ids resolve to the corpus's unprefixed MARCO ids, grades kept
    raw = read_qrels(cast / "2020/2020qrels.txt")["81_3"]
    assert q.qrels == {d.removeprefix("MARCO_"): g for d, g in raw.items()}
    assert task.warnings["ids matched to corpus ids without their collection prefix"] > 0


def test_cast_beir_corpus_and_missing_canonical_passage(cast, tmp_path):
    folder = tmp_path / "beir"
    folder.mkdir()
    auto = json.loads((cast / "2020/2020_automatic_evaluation_topics_v1.0.json").read_text())
    missing = auto[0]["turn"][0]["automatic_canonical_result_id"]
    texts = _topic81_corpus(cast, tmp_path / "unused.tsv", skip={missing})
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "T", "text": t}) + "\n" for d, t in texts.items())
    )
    task = load_task("trec-cast-2020", data_dir=cast / "2020", corpus_path=folder)
    q = next(q for q in task.queries if q.qid == "81_2")
    assert [m.role for m in q.history] == ["user"]  # turn 1's canonical passage is not in this corpus
    q = next(q for q in task.queries if q.qid == "81_3")
    assert [m.role for m in q.history] == ["user", "user", "assistant"]
    assert "ids matched to corpus ids without their collection prefix" not in task.warnings


def test_missing_corpus_and_data_are_clear_errors(cast):
    with pytest.raises(MtrbenchError) as info:
        load_task("trec-cast-2019", data_dir=cast)
    assert "\n" not in str(info.value) and "--corpus PATH" in str(info.value) and "MS MARCO" in str(info.value)
    with pytest.raises(MtrbenchError, match="treccastweb.*--data-dir"):
        load_task("trec-cast-2020")


def _copy(cast: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "cast"
    shutil.copytree(cast, folder)
    return folder


def test_malformed_topic_turn_names_file_and_record(cast, tmp_path):
    folder = _copy(cast, tmp_path)
    path = folder / "2019/evaluation_topics_v1.0.json"
    topics = json.loads(path.read_text())
    del topics[2]["turn"][1]["raw_utterance"]
    path.write_text(json.dumps(topics, indent=2))
    number = topics[2]["number"]
    with pytest.raises(
        MtrbenchError,
        match=rf"evaluation_topics_v1\.0\.json record 2 \({number}_2\): turn 1 needs "
        r"a string 'raw_utterance'",
    ):
        load_task("trec-cast-2019", data_dir=folder, require_corpus=False)


def test_malformed_qrels_line_names_file_and_record(cast, tmp_path):
    folder = _copy(cast, tmp_path)
    path = folder / "2020/2020qrels.txt"
    lines = path.read_text().splitlines()
    lines[5] = " ".join(lines[5].split()[:3])
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MtrbenchError, match=r"2020qrels\.txt record 5: a qrels line needs 'qid iter docid grade'"):
        load_task("trec-cast-2020", data_dir=folder, require_corpus=False)


def test_malformed_rewrite_line_names_file_and_record(cast, tmp_path):
    folder = _copy(cast, tmp_path)
    path = folder / "2019/evaluation_topics_annotated_resolved_v1.0.tsv"
    lines = path.read_text().splitlines()
    lines[7] = lines[7].replace("\t", " ")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MtrbenchError, match=r"resolved_v1\.0\.tsv record 7: expected '<topic>_<turn><TAB><rewrite>'"):
        load_task("trec-cast-2019", data_dir=folder, require_corpus=False)


def test_malformed_tsv_corpus_names_file(cast, tmp_path):
    (tmp_path / "corpus.tsv").write_text("MARCO_1\ta\tb\tc\n")
    with pytest.raises(MtrbenchError, match=r"corpus\.tsv record 0: a TSV corpus needs"):
        load_task("trec-cast-2019", data_dir=cast, corpus_path=tmp_path / "corpus.tsv")


def _trimmed(cast: Path, tmp_path: Path, year: int) -> tuple[Path, Path]:
    """The first topic, up to 30 positive judgments of each of its first three turns, a stand-in corpus of those ids."""
    src, out = cast / str(year), tmp_path / f"cast{year}"
    out.mkdir()
    names = (
        ["evaluation_topics_v1.0.json", "evaluation_topics_annotated_resolved_v1.0.tsv"]
        if year == 2019
        else ["2020_manual_evaluation_topics_v1.0.json", "2020_automatic_evaluation_topics_v1.0.json"]
    )
    first = None
    for name in names:
        if name.endswith(".json"):
            topics = json.loads((src / name).read_text())
            first = topics[0]
            (out / name).write_text(json.dumps(topics[:1]))
        else:
            shutil.copy(src / name, out / name)
    keep = {f"{first['number']}_{t}" for t in (1, 2, 3)}
    lines, per_turn = [], {}
    for line in (src / f"{year}qrels.txt").read_text().splitlines():
        qid, _, _, grade = line.split()
        if qid in keep and int(grade) > 0 and per_turn.get(qid, 0) < 30:  # a small corpus keeps the test fast
            per_turn[qid] = per_turn.get(qid, 0) + 1
            lines.append(line)
    (out / f"{year}qrels.txt").write_text("\n".join(lines) + "\n")
    docs = sorted({line.split()[2] for line in lines})
    corpus = tmp_path / f"corpus{year}.tsv"
    corpus.write_text("id\ttext\n" + "".join(f"{d}\tjudged passage {d}\n" for d in docs))
    return out, corpus


@pytest.mark.slow
@pytest.mark.parametrize("year", [2019, 2020])
def test_eval_end_to_end(cast, tmp_path, year):
    data, corpus = _trimmed(cast, tmp_path, year)
    name = f"trec-cast-{year}"
    proc = run_cli(
        "eval",
        "--task",
        name,
        "--data-dir",
        str(data),
        "--corpus",
        str(corpus),
        "--model",
        "minilm",
        "--quiet",
        "--output-dir",
        str(tmp_path / "out"),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(next((tmp_path / "out").rglob(f"{name}.json")).read_text())
    topics = json.loads(next(data.glob("*.json")).read_text())
    assert doc["mtrbench"]["queries"]["total"] == len(topics[0]["turn"])
    assert doc["mtrbench"]["queries"]["evaluated"] == 3
    assert doc["mtrbench"]["corpus_size"] == len(corpus.read_text().splitlines()) - 1
    split = doc["scores"]["test"][0]
    assert split["main_score"] == split["ndcg_at_3"]
