"""MTRAG loader (SCHEMAS.md §7): the three published query variants -> query, gold rewrite, history."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from cli_run import run_cli

from mtrbench.cli import main as cli_main
from mtrbench.data import load_task
from mtrbench.infra.errors import MtrbenchError

DOMAINS = ["clapnq", "cloud", "fiqa", "govt"]
# SCHEMAS §7: clapnq 822086267_7384-8758-0-1374, cloud ibmcld_00474-7885-8455, fiqa 471123-0-798,
# govt c8db6e06ff46669e-50302-52227
CORPUS_ID_FORM = {
    "clapnq": r"\d+_\d+-\d+-\d+-\d+",
    "cloud": r"ibmcld_\d+-\d+-\d+",
    "fiqa": r"\d+-\d+-\d+",
    "govt": r"[0-9a-f]{16}-\d+-\d+",
}
PREFIX = "|user|: "


@pytest.fixture(scope="module")
def real(shared) -> Path:
    return shared / "datasets/real/mtrag"


@pytest.fixture(scope="module")
def fixture(shared) -> Path:
    return shared / "datasets/fixtures/mtrag"


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def tsv_qrels(path: Path) -> dict[str, dict[str, int]]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    assert rows[0] == ["query-id", "corpus-id", "score"]
    out: dict[str, dict[str, int]] = {}
    for qid, doc, score in rows[1:]:
        out.setdefault(qid, {})[doc] = int(score)
    return out


def unprefix(text: str) -> str:
    assert text.startswith("|user|:")
    return text[len("|user|:") :].strip()


def expected_from_files(folder: Path, domain: str) -> list[dict]:
    """The queries, computed straight from the three published files and the qrels."""
    last = jsonl(folder / f"{domain}_lastturn.jsonl")
    rewrite = {r["_id"]: r["text"] for r in jsonl(folder / f"{domain}_rewrite.jsonl")}
    questions = {r["_id"]: r["text"] for r in jsonl(folder / f"{domain}_questions.jsonl")}
    qrels = tsv_qrels(folder / "qrels/dev.tsv")
    out = []
    for r in last:
        conv, turn = r["_id"].split("<::>")
        lines = questions[r["_id"]].split("\n")
        out.append(
            {
                "qid": r["_id"],
                "conversation_id": conv,
                "turn_id": int(turn),
                "query": unprefix(r["text"]),
                "gold_rewrite": unprefix(rewrite[r["_id"]]),
                "history": [unprefix(x) for x in lines[:-1]],
                "last_in_questions": unprefix(lines[-1]),
                "qrels": qrels.get(r["_id"], {}),
            }
        )
    return out


def nonblank_lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


@pytest.mark.parametrize("domain", DOMAINS)
def test_real_retrieval_tasks(real, domain):
    folder = real / "retrieval_tasks" / domain
    task = load_task(f"mtrag-{domain}", data_dir=real, require_corpus=False)
    n_lines = {kind: nonblank_lines(folder / f"{domain}_{kind}.jsonl") for kind in ("lastturn", "rewrite", "questions")}
    assert len(set(n_lines.values())) == 1
    assert len(task.queries) == n_lines["lastturn"]
    assert len(task.corpus) == 0 and dict(task.warnings) == {}
    expected = expected_from_files(folder, domain)
    assert [q.qid for q in task.queries] == [e["qid"] for e in expected]
    for q, e in zip(task.queries, expected):
        assert (q.conversation_id, q.turn_id, q.query, q.gold_rewrite) == (
            e["conversation_id"],
            e["turn_id"],
            e["query"],
            e["gold_rewrite"],
        )
        assert [m.content for m in q.history] == e["history"] and {m.role for m in q.history} <= {"user"}
        assert e["last_in_questions"] == e["query"]
        assert q.qrels == e["qrels"]  # kept although no corpus is loaded
        assert len(q.history) == q.turn_id - 1  # skipped (unanswerable) turns still count in the history
        assert q.meta["domain"] == domain
    qrels = tsv_qrels(folder / "qrels/dev.tsv")
    assert task.qrels() == qrels
    form = re.compile(CORPUS_ID_FORM[domain])
    ids = [d for docs in task.qrels().values() for d in docs]
    assert ids and all(form.fullmatch(d) for d in ids)


def test_real_counts_by_hand(real):
    """Published sizes (wc -l of the lastturn files, qrels rows without header)."""
    sizes = {
        d: (len(t.queries), sum(len(q.qrels) for q in t.queries))
        for d in DOMAINS
        for t in [load_task(f"mtrag-{d}", data_dir=real / "retrieval_tasks", require_corpus=False)]
    }
    assert sizes == {"clapnq": (208, 578), "cloud": (188, 494), "fiqa": (180, 535), "govt": (201, 521)}


def test_fixture_with_corpus(fixture):
    task = load_task("mtrag-clapnq", data_dir=fixture)
    with zipfile.ZipFile(fixture / "corpora/passage_level/clapnq.jsonl.zip") as z:
        passages = [json.loads(line) for line in io.TextIOWrapper(z.open("clapnq.jsonl"), encoding="utf-8")]
    assert task.corpus.ids == [p["_id"] for p in passages] and len(task.corpus) == 40
    assert task.corpus.titles[0] == passages[0]["title"] and task.corpus.texts[0] == passages[0]["text"]
    folder = fixture / "mtrag-human/retrieval_tasks/clapnq"
    expected = expected_from_files(folder, "clapnq")
    assert [
        (q.qid, q.turn_id, q.query, q.gold_rewrite, [m.content for m in q.history], q.qrels) for q in task.queries
    ] == [(e["qid"], e["turn_id"], e["query"], e["gold_rewrite"], e["history"], e["qrels"]) for e in expected]
    assert dict(task.warnings) == {}
    # hand-read: turn 2 (unanswerable) is not a query, but its question is in turn 3's history
    q3 = task.queries[1]
    assert q3.qid == "5f3a0c9e2b7d4e18a6c1f0b9d2e47a31<::>3" and q3.turn_id == 3
    assert [m.content for m in q3.history] == [
        "Who designed the Orrin Suspension Bridge?",
        "Who is the current mayor of Calder?",
    ]
    assert q3.query == "When did it open to traffic?"
    assert q3.gold_rewrite == "When did the Orrin Suspension Bridge open to traffic?"
    assert q3.qrels == {"700000295_379-583-0-204": 1}
    # answers and labels from generation_tasks/reference.jsonl
    assert q3.answers == ("It opened on 14 May 1931; construction had started in 1927.",)
    assert q3.meta["answerability"] == ["ANSWERABLE"] and q3.meta["multi_turn"] == ["Follow-up"]
    assert task.queries[4].meta["answerability"] == ["PARTIAL"]
    assert q3.meta["collection"] == "mt-rag-clapnq-elser-512-100-20240503"
    assert [q.qid.split("<::>")[1] for q in task.queries] == ["1", "3", "4", "5", "6", "1", "2", "3"]


@pytest.mark.parametrize("corpus", ["corpora/passage_level/clapnq.jsonl.zip", "corpora/passage_level", "corpora"])
def test_corpus_option(fixture, corpus):
    task = load_task("mtrag-clapnq", data_dir=fixture / "mtrag-human/retrieval_tasks", corpus_path=fixture / corpus)
    assert len(task.corpus) == 40 and len(task.queries) == 8 and dict(task.warnings) == {}


def _copy(fixture: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "mtrag"
    shutil.copytree(fixture, folder)
    return folder


def test_corpus_without_offset_suffix_is_matched(fixture, tmp_path):
    """Older corpus files drop the two trailing offsets the qrels carry (retrieval_tasks/README)."""
    folder = _copy(fixture, tmp_path)
    zip_path = folder / "corpora/passage_level/clapnq.jsonl.zip"
    with zipfile.ZipFile(zip_path) as z:
        passages = [json.loads(line) for line in io.TextIOWrapper(z.open("clapnq.jsonl"), encoding="utf-8")]
    zip_path.unlink()
    short = folder / "clapnq.jsonl"
    short.write_text("".join(json.dumps({**p, "_id": p["_id"].rsplit("-", 2)[0]}) + "\n" for p in passages))
    task = load_task("mtrag-clapnq", data_dir=folder, corpus_path=short)
    assert task.queries[1].qrels == {"700000295_379-583": 1}
    n_qrels = sum(len(d) for d in tsv_qrels(folder / "mtrag-human/retrieval_tasks/clapnq/qrels/dev.tsv").values())
    assert task.warnings["qrels ids matched to corpus ids differing by the offset suffix"] == n_qrels == 10
    assert "qrels naming unknown documents (dropped)" not in task.warnings


def test_git_lfs_pointer_corpus_is_a_clear_error(fixture, tmp_path):
    pointer = tmp_path / "clapnq.jsonl.zip"
    pointer.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n")
    with pytest.raises(MtrbenchError, match="Git LFS pointer.*git lfs pull"):
        load_task("mtrag-clapnq", data_dir=fixture, corpus_path=pointer)


def test_missing_corpus_is_one_clear_error(real):
    with pytest.raises(MtrbenchError) as info:
        load_task("mtrag-govt", data_dir=real)
    assert "\n" not in str(info.value) and "--corpus PATH" in str(info.value) and "govt.jsonl.zip" in str(info.value)
    with pytest.raises(MtrbenchError, match="github.com/IBM/mt-rag-benchmark.*--data-dir"):
        load_task("mtrag-govt")


def _edit(folder: Path, name: str, index: int, change) -> None:
    path = folder / "mtrag-human/retrieval_tasks/clapnq" / name
    rows = jsonl(path)
    change(rows[index])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize(
    "name,index,change,needle",
    [
        (
            "clapnq_lastturn.jsonl",
            2,
            lambda r: r.update(_id="5f3a0c9e2b7d4e18a6c1f0b9d2e47a31::4"),
            r"clapnq_lastturn\.jsonl record 2 \(5f3a0c9e2b7d4e18a6c1f0b9d2e47a31::4\): _id must be",
        ),
        (
            "clapnq_questions.jsonl",
            2,
            lambda r: r.update(text=r["text"].rsplit("\n", 1)[0]),
            r"clapnq_questions\.jsonl record 2 \(5f3a0c9e2b7d4e18a6c1f0b9d2e47a31<::>4\): its last user turn",
        ),
        (
            "clapnq_questions.jsonl",
            3,
            lambda r: r.update(text=r["text"].replace("|user|: ", "", 1)),
            r"clapnq_questions\.jsonl record 3 \(5f3a0c9e2b7d4e18a6c1f0b9d2e47a31<::>5\): a flattened conversation",
        ),
        (
            "clapnq_rewrite.jsonl",
            1,
            lambda r: r.update(_id="nope<::>1"),
            r"clapnq_lastturn\.jsonl record 1 \(5f3a0c9e2b7d4e18a6c1f0b9d2e47a31<::>3\): no record with this _id in .*clapnq_rewrite",
        ),
        (
            "clapnq_rewrite.jsonl",
            0,
            lambda r: r.pop("text"),
            r"clapnq_rewrite\.jsonl record 0: needs '_id' and a string 'text'",
        ),
    ],
)
def test_malformed_records_name_file_and_record(fixture, tmp_path, name, index, change, needle):
    folder = _copy(fixture, tmp_path)
    _edit(folder, name, index, change)
    with pytest.raises(MtrbenchError, match=needle):
        load_task("mtrag-clapnq", data_dir=folder)


def test_incomplete_qrels_row_names_file_and_record(fixture, tmp_path):
    folder = _copy(fixture, tmp_path)
    path = folder / "mtrag-human/retrieval_tasks/clapnq/qrels/dev.tsv"
    lines = path.read_text().splitlines()
    lines[3] = lines[3].rsplit("\t", 1)[0]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        MtrbenchError,
        match=r"qrels/dev\.tsv record 3: a qrels line needs 'query-id<TAB>corpus-id<TAB>score', got 2 fields",
    ):
        load_task("mtrag-clapnq", data_dir=folder)


@pytest.mark.slow
def test_eval_end_to_end_clapnq(fixture, tmp_path):
    proc = run_cli(
        "eval",
        "--task",
        "mtrag-clapnq",
        "--data-dir",
        str(fixture),
        "--model",
        "minilm",
        "--quiet",
        "--output-dir",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    files = list(tmp_path.rglob("mtrag-clapnq.json"))
    doc = json.loads(files[0].read_text())
    assert doc["mtrbench"]["queries"] == {"total": 8, "evaluated": 8, "excluded_without_positives": 0}
    split = doc["scores"]["dev"][0]
    assert split["main_score"] == split["ndcg_at_5"]


@pytest.mark.parametrize("domain", ["cloud", "fiqa", "govt"])
def test_eval_end_to_end_real_queries(real, tmp_path, domain, capsys):
    """Real queries and qrels of the first conversations, over a stand-in corpus of their gold passage ids."""
    source = real / "retrieval_tasks" / domain
    folder = tmp_path / "retrieval_tasks" / domain
    (folder / "qrels").mkdir(parents=True)
    keep = [r["_id"] for r in jsonl(source / f"{domain}_lastturn.jsonl")][:12]
    for kind in ("lastturn", "rewrite", "questions"):
        rows = [r for r in jsonl(source / f"{domain}_{kind}.jsonl") if r["_id"] in keep]
        (folder / f"{domain}_{kind}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    qrels = {q: d for q, d in tsv_qrels(source / "qrels/dev.tsv").items() if q in keep}
    (folder / "qrels/dev.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"{q}\t{d}\t{s}\n" for q, docs in qrels.items() for d, s in docs.items())
    )
    rewrites = {r["_id"]: unprefix(r["text"]) for r in jsonl(folder / f"{domain}_rewrite.jsonl")}
    passages = {d: rewrites[q] for q, docs in qrels.items() for d in docs}
    corpus = tmp_path / f"{domain}.jsonl.zip"
    with zipfile.ZipFile(corpus, "w") as z:
        z.writestr(
            f"{domain}.jsonl",
            "".join(json.dumps({"_id": d, "title": "", "text": t, "url": ""}) + "\n" for d, t in passages.items()),
        )
    code = cli_main(
        [
            "eval",
            "--task",
            f"mtrag-{domain}",
            "--data-dir",
            str(tmp_path),
            "--corpus",
            str(corpus),
            "--model",
            "minilm",
            "--quiet",
            "--output-dir",
            str(tmp_path / "out"),
        ]
    )
    assert code == 0, capsys.readouterr().err
    doc = json.loads(next((tmp_path / "out").rglob(f"mtrag-{domain}.json")).read_text())
    assert doc["mtrbench"]["queries"]["total"] == 12 and doc["mtrbench"]["corpus_size"] == len(passages)
    assert doc["mtrbench"]["warnings"] == {}
