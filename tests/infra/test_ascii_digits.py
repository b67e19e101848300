"""Numbers read from data files and options are ASCII digits: ``str.isdigit()`` also takes "²" (superscript two),
which ``int()`` refuses (a traceback instead of one error line), and "١" (Arabic-Indic one), which ``int()`` reads,
silently, as 1. Each reader refuses both as it refuses any other non-number, and reads ASCII digits as before."""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from mtrbench.cli import main
from mtrbench.data import load_task
from mtrbench.data.loaders.chatrag import _gold_entries
from mtrbench.data.loaders.mtrag import _split_qid
from mtrbench.data.loaders.mtragun import _query
from mtrbench.infra.errors import DataError, MtrbenchError, UserInputError
from mtrbench.infra.numeric import ascii_digits
from mtrbench.measures.registry import parse
from mtrbench.results.compare_setup import baseline_index
from mtrbench.serialize.history import get_strategy
from mtrbench.serialize.ptkb import parse_ptkb

SUPERSCRIPT_TWO = "\u00b2"  # "²": isdigit() True, int() raises ValueError
ARABIC_ONE = "\u0661"  # "١": isdigit() True, int() == 1
OTHER_DIGITS = [SUPERSCRIPT_TWO, ARABIC_ONE, "1" + SUPERSCRIPT_TWO, ARABIC_ONE + "0"]


def test_the_premise_other_digits_pass_isdigit():
    assert all(d.isdigit() for d in OTHER_DIGITS)
    assert int(ARABIC_ONE) == 1
    with pytest.raises(ValueError):
        int(SUPERSCRIPT_TWO)


@pytest.mark.parametrize("text", ["0", "7", "12", "007", "1000000"])
def test_ascii_digits_are_digits(text):
    assert ascii_digits(text)


@pytest.mark.parametrize("text", [*OTHER_DIGITS, "", " 1", "1 ", "-1", "+1", "1.0", "1e3", "one", "\uff11"])
def test_anything_else_is_not(text):
    assert not ascii_digits(text)


# ------------------------------------------------------------------------------------------- QReCC (file, CLI)


def _qrecc_dir(shared: Path, tmp_path: Path, turn_no: object) -> Path:
    with zipfile.ZipFile(shared / "datasets/fixtures/qrecc/dataset/qrecc_data.zip") as archive:
        turn = json.loads(archive.read("qrecc_test.json"))[1]  # conversation 74, turn 2
    (tmp_path / "qrecc_test.json").write_text(json.dumps([{**turn, "Turn_no": turn_no}]), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("turn_no", [SUPERSCRIPT_TWO, ARABIC_ONE + "0"])
def test_a_qrecc_turn_number_in_other_digits_is_one_error_naming_file_and_record(shared, tmp_path, turn_no):
    folder = _qrecc_dir(shared, tmp_path, turn_no)
    with pytest.raises(DataError) as info:
        load_task("qrecc", data_dir=folder, require_corpus=False)
    assert str(info.value) == (
        f"{folder / 'qrecc_test.json'} record 0: needs integer Conversation_no and Turn_no >= 1, got 74, {turn_no!r}"
    )


def test_a_qrecc_turn_number_in_ascii_digits_still_reads(shared, tmp_path):
    task = load_task("qrecc", data_dir=_qrecc_dir(shared, tmp_path, " 2"), require_corpus=False)
    assert [(q.qid, q.turn_id) for q in task.queries] == [("74_2", 2)]


def test_the_command_line_says_it_in_one_error_line(shared, tmp_path, capsys):
    (tmp_path / "data").mkdir()
    folder = _qrecc_dir(shared, tmp_path / "data", SUPERSCRIPT_TWO)
    run = tmp_path / "run.trec"
    run.write_text("74_2 Q0 some-passage 1 1.0 r\n")
    assert main(["score", "--run", str(run), "--task", "qrecc", "--data-dir", str(folder)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == [
        f"error: {folder / 'qrecc_test.json'} record 0: needs integer Conversation_no and Turn_no >= 1, got 74, "
        f"{SUPERSCRIPT_TWO!r}"
    ]


# ------------------------------------------------------------------------------------- ChatRAG, MTRAG, MTRAG-UN


@pytest.mark.parametrize("index", [SUPERSCRIPT_TWO, "-" + SUPERSCRIPT_TWO, ARABIC_ONE])
def test_a_chatrag_gold_index_in_other_digits_is_refused(index):
    with pytest.raises(DataError) as info:
        _gold_entries({"index": index, "ctx": "a passage"}, "test.json record 3")
    assert str(info.value) == f"test.json record 3: ground_truth_ctx index must be an integer, got {index!r}"


def test_a_chatrag_gold_index_in_ascii_digits_still_reads():
    assert _gold_entries({"index": " 3 ", "ctx": "a passage"}, "w") == [(3, "a passage")]
    assert _gold_entries({"index": 4}, "w") == [(4, None)]


@pytest.mark.parametrize("turn", [SUPERSCRIPT_TWO, ARABIC_ONE])
def test_an_mtrag_turn_number_in_other_digits_is_refused(turn):
    with pytest.raises(DataError, match=r"^q\.jsonl record 0: _id must be '<conversation_id><::><turn>'"):
        _split_qid(f"c1<::>{turn}", "q.jsonl record 0")
    assert _split_qid("c1<::>12", "w") == ("c1", 12)


@pytest.mark.parametrize("turn", [SUPERSCRIPT_TWO, ARABIC_ONE])
def test_an_mtrag_un_turn_number_in_other_digits_is_refused(turn):
    row = {"task_id": f"c1<::>{turn}", "input": [{"speaker": "user", "text": "a question"}]}
    with pytest.raises(DataError) as info:
        _query(row, 0, Path("t.jsonl"), "clapnq", {}, Counter())
    assert str(info.value) == f"t.jsonl record 0 (c1<::>{turn}): the turn after <::> must be a number >= 1"


# -------------------------------------------------------------------------- options: --ptkb, --history, metrics


@pytest.mark.parametrize("count", [SUPERSCRIPT_TWO, ARABIC_ONE])
def test_ptkb_top_k_in_other_digits_is_refused(count):
    with pytest.raises(UserInputError, match=rf"^--ptkb top:{count}: use one of"):
        parse_ptkb(f"top:{count}")
    choice = parse_ptkb("top:3")
    assert choice is not None and (choice.kind, choice.k) == ("top", 3)


@pytest.mark.parametrize("k", [SUPERSCRIPT_TWO, ARABIC_ONE])
def test_history_window_in_other_digits_is_refused(k):
    with pytest.raises(MtrbenchError, match=rf"^--history window:{k}: use window:K with K >= 1"):
        get_strategy(f"window:{k}")
    assert get_strategy("window:2").name == "window:2"


@pytest.mark.parametrize("rel", [SUPERSCRIPT_TWO, ARABIC_ONE])
def test_a_measure_rel_in_other_digits_is_refused(rel):
    with pytest.raises(MtrbenchError, match=rf"rel must be a positive integer, got '{rel}'"):
        parse(f"R@100(rel={rel})")
    assert parse("R@100(rel=2)").rel == 2


def test_a_measure_cutoff_in_other_digits_is_refused():
    # "\d" in a str pattern matches "١٠" too (int() reads it as 10); "²" it never matched
    with pytest.raises(MtrbenchError, match=r"write a measure as NAME@K"):
        parse(f"nDCG@{ARABIC_ONE}0")
    assert parse("nDCG@10").cutoff == 10


@pytest.mark.parametrize("choice", [SUPERSCRIPT_TWO, ARABIC_ONE])
def test_a_baseline_position_in_other_digits_is_refused(choice):
    systems = [SimpleNamespace(name=n) for n in ("bm25", "dense", "fused")]
    with pytest.raises(MtrbenchError, match=rf"^--baseline {choice}: not a system's letter \(a-c\), position \(1-3\)"):
        baseline_index(choice, systems)  # type: ignore[arg-type]
    assert [baseline_index(c, systems) for c in ("2", "c", "bm25", None)] == [1, 2, 0, 0]  # type: ignore[arg-type]


# Regular expressions that feed int(): `\d` matches "١" (not "²"), which int() then reads as 1.


def test_topiocqa_query_ids_need_ascii_turn_numbers():
    from mtrbench.data.loaders.topiocqa import _to_query

    assert _to_query({"_id": "c7-3", "text": ["q"]}, "queries.jsonl line 1", Counter()).turn_id == 3
    with pytest.raises(DataError, match=r"queries.jsonl line 1 \(c7-\u0661\): query id must be"):
        _to_query({"_id": f"c7-{ARABIC_ONE}", "text": ["q"]}, "queries.jsonl line 1", Counter())


def test_a_turn_number_in_other_digits_names_no_conversation():
    from mtrbench.analyses.meta.inputs import conversation_of

    assert conversation_of("31_4") == "31"
    assert conversation_of(f"31_{ARABIC_ONE}") is None  # a query of its own, not turn 1 of conversation 31


def test_citation_marks_are_ascii_numbers():
    from mtrbench.measures.generation import citation_labels, strip_citations

    assert citation_labels("Paris [1, 2]. Rome [3]") == [1, 2, 3]
    assert citation_labels(f"Paris [{ARABIC_ONE}]") == []
    assert strip_citations(f"Paris [{ARABIC_ONE}].") == f"Paris [{ARABIC_ONE}]."


def test_result_keys_with_other_digits_name_no_measure():
    from mtrbench.measures.registry import measure_for_key

    found = measure_for_key("ndcg_at_10")
    assert found is not None and found.cutoff == 10
    assert measure_for_key(f"ndcg_at_{ARABIC_ONE}0") is None
    assert measure_for_key(f"ndcg_at_10_rel{ARABIC_ONE}") is None
