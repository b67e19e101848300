"""Every numeric flag of every command declares its range where it is declared (mtrbench/cli/flag_types.py), so an
out-of-range value is one `error: --FLAG ...` line and exit 2 while the command line is read: before a file is
opened, a model loaded or a request sent. The parser is walked, so a flag added later with a bare ``type=int`` or
``type=float`` fails here until its range is declared (or it is listed in NO_INVALID_VALUE with the reason).

Relations between flags and flags a chosen model ignores are checked by the handlers; the cases below run in a
subprocess that reports which heavy libraries were imported, to show the refusal came before any of them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mtrbench.cli import build_parser, main
from mtrbench.cli.app import UsageError
from mtrbench.cli.flag_types import FloatFlag, IntFlag, ListFlag, WeightsFlag
from mtrbench.infra.errors import MtrbenchError
from mtrbench.retrieve.chunking import Chunking

ROOT = Path(__file__).resolve().parents[2]
NUMBER_TYPES = (IntFlag, FloatFlag, WeightsFlag, ListFlag)

# (command words, flag) -> why no value of it is out of range. Empty today: every numeric flag has a bound.
NO_INVALID_VALUE: dict[tuple[tuple[str, ...], str], str] = {}


def _walk(parser: argparse.ArgumentParser, words: tuple[str, ...]):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*words, name))
        elif action.option_strings:
            yield words, action


def _long(action: argparse.Action) -> str:
    return max(action.option_strings, key=len)


def numeric_flags() -> list[tuple[tuple[str, ...], argparse.Action]]:
    return [
        (words, action)
        for words, action in _walk(build_parser(), ())
        if action.type in (int, float) or isinstance(action.type, NUMBER_TYPES)
    ]


def out_of_range(kind: object) -> str:
    """A value just past the range ``kind`` declares (worked out from its bounds, not from its messages)."""
    if isinstance(kind, ListFlag):
        return f"{_first_valid(kind.item)},{out_of_range(kind.item)}"  # one bad item in a list is enough
    if isinstance(kind, WeightsFlag):
        return "nan,1"
    if isinstance(kind, IntFlag):
        return str(kind.low - 1)
    assert isinstance(kind, FloatFlag), kind
    if kind.low is not None:
        return str(kind.low) if kind.low_open else str(kind.low - 0.5)
    if kind.high is not None:
        return str(kind.high) if kind.high_open else str(kind.high + 0.5)
    return "inf"


def _first_valid(kind: IntFlag | FloatFlag) -> str:
    if isinstance(kind, IntFlag):
        return str(kind.low)
    low = kind.low if kind.low is not None else 0.0
    return str(low + 0.25 if kind.low_open else low)


PARSER = build_parser()
FLAGS = numeric_flags()


def test_every_numeric_flag_declares_its_range():
    bare = [
        f"{' '.join(words)} {_long(a)}"
        for words, a in FLAGS
        if a.type in (int, float) and (words, _long(a)) not in NO_INVALID_VALUE
    ]
    assert not bare, f"numeric flags without a range (use a type from mtrbench/cli/flag_types.py): {bare}"
    # the walk reaches every command's flags: eval's, a nested command's (judge run), the shared LLM ones
    found = {(words, _long(a)) for words, a in FLAGS}
    assert {(("eval",), "--top-k"), (("judge", "run"), "--max-failure-rate"), (("pool",), "--orders")} <= found
    assert len(FLAGS) > 100


@pytest.mark.parametrize("words,action", FLAGS, ids=[f"{' '.join(w)} {_long(a)}" for w, a in FLAGS])
def test_an_out_of_range_value_is_refused_while_the_line_is_read(words, action):
    if (words, _long(action)) in NO_INVALID_VALUE:
        pytest.skip(NO_INVALID_VALUE[(words, _long(action))])
    bad = out_of_range(action.type)
    with pytest.raises(UsageError) as refused:
        PARSER.parse_args([*words, f"{_long(action)}={bad}"])
    message = str(refused.value)
    assert message.startswith(f"{_long(action)} ") and "\n" not in message, message


def test_the_values_just_inside_the_range_are_accepted():
    for _, action in FLAGS:
        if isinstance(action.type, IntFlag | FloatFlag):
            value = _first_valid(action.type)
            assert action.type(value) == (int(value) if isinstance(action.type, IntFlag) else float(value))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fuse", "a", "b", "-o", "x", "--method", "wsum", "--weights", "nan,1"], "--weights must be finite numbers"),
        (["fuse", "a", "b", "-o", "x", "--method", "wsum", "--weights", "inf,1"], "--weights must be finite numbers"),
        (["fuse", "a", "b", "-o", "x", "--method", "wsum", "--weights=-1,2"], "--weights must be 0 or more"),
        (["fuse", "a", "b", "-o", "x", "--method", "wsum", "--weights", "0,0"], "--weights must not all be 0"),
        (["pool", "r", "--qrels", "q", "--refined-qrels", "q", "--k", "0"], "--k must be at least 1, got 0"),
        (["pool", "r", "--qrels", "q", "--refined-qrels", "q", "--orders", "0"], "--orders must be at least 1, got 0"),
        (["export", "t", "--out", "o", "--max-length", "0"], "--max-length must be at least 1, got 0"),
        (["judge", "run", "g.jsonl", "--max-failure-rate", "2"], "--max-failure-rate is a share between 0 and 1"),
        (["synthesize", "c", "--out", "o", "--soft-switch-probability", "1.5"], "must be between 0 and 1, got 1.5"),
        (["eval", "--alpha", "0.5,1.5"], "--alpha must be between 0 and 1, got 1.5"),
        (["eval", "--top-k", "ten"], "--top-k is not an integer: 'ten'"),
        (["eval", "--nosuch"], "unrecognized arguments: --nosuch"),
    ],
)
def test_the_cases_of_issue_32_are_one_error_line(argv, message, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: "), err
    assert message in err


PROBE = """
import json, sys
from mtrbench.cli import main
HEAVY = ("torch", "transformers", "openai", "pytrec_eval", "sentence_transformers", "faiss")
code = main(json.loads(sys.argv[1]))
print(json.dumps({"code": code, "heavy": [m for m in HEAVY if m in sys.modules]}))
"""


def _refused_before_heavy_work(argv: list[str], cwd: Path) -> tuple[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 2 and done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), done.stderr
    return done.stderr, report["heavy"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["eval", "-m", "bm25", "--chunking", "sentences:2:5"], "a stride larger than the size"),
        (["eval", "-m", "bm25", "--index", "faiss:hnsw"], "--index applies to encoder models; bm25 is BM25"),
        (["eval", "-m", "bm25", "--max-length", "128", "--ray"], "--ray, --max-length apply to encoder models"),
        (["synthesize", "corpus.jsonl", "--out", "work", "--turns", "3", "--hard-switches", "5"], "needs at least 7"),
        (["synthesize", "corpus.jsonl", "--out", "work", "--name", "../../x"], "no path separators, '..'"),
        (["synthesize", "corpus.jsonl", "--out", "work", "--name", "a/b"], "no path separators, '..'"),
        (["cache", "ls", "--cache-dir", "a-file"], "--cache-dir a-file is a file"),
        (["fuse", "a", "b", "-o", "f", "--method", "wsum", "--rrf-k", "10"], "--rrf-k applies to --method rrf only"),
        (["rag", "--model", "bm25", "--generator-model", "g", "--max-length", "64"], "--max-length applies to encoder"),
    ],
)
def test_relations_and_ignored_flags_are_refused_before_any_model_or_request(argv, message, tmp_path):
    (tmp_path / "a-file").write_text("not a folder\n")
    err, heavy = _refused_before_heavy_work(argv, tmp_path)
    assert message in err and heavy == [], (err, heavy)
    assert not (tmp_path / "work").exists() and not (tmp_path.parent / "x").exists()


def test_an_eval_over_several_models_keeps_a_flag_one_of_them_reads():
    """--max-length is refused only when every model evaluated would ignore it (minilm reads it)."""
    from mtrbench.cli.eval import _refuse_flags_bm25_ignores

    _refuse_flags_bm25_ignores(build_parser().parse_args(["eval", "-m", "bm25,minilm", "--max-length", "64"]))
    with pytest.raises(MtrbenchError, match="--max-length applies to encoder models"):
        _refuse_flags_bm25_ignores(build_parser().parse_args(["eval", "-m", "bm25", "--max-length", "64"]))


@pytest.mark.parametrize(
    "spec, ok",
    [("sentences:3:2", True), ("sentences:3:3", True), ("sentences:2:5", False), ("sentences:1:2", False)],
)
def test_a_chunking_stride_past_the_window_is_refused_in_the_api_too(spec, ok):
    if ok:
        chunking = Chunking.parse(spec)
        # every sentence of a text longer than one window lands in some child
        sentences = [f"s{i}." for i in range(10)]
        covered = {s for window in chunking.windows(sentences) for s in window.split()}
        assert covered == set(sentences)
    else:
        with pytest.raises(MtrbenchError, match="stride larger than the size"):
            Chunking.parse(spec)


def test_pool_refuses_refined_qrels_that_drop_original_judgments(tmp_path, capsys):
    (tmp_path / "o.qrels").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n")
    (tmp_path / "r.qrels").write_text("q1 0 d1 1\nq1 0 d4 1\n")  # drops q1/d2 and all of q2
    (tmp_path / "a.trec").write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d4 2 1.0 a\n")
    argv = ["pool", str(tmp_path / "a.trec"), "--qrels", str(tmp_path / "o.qrels")]
    code = main([*argv, "--refined-qrels", str(tmp_path / "r.qrels"), "--output", str(tmp_path / "p.json")])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: {tmp_path / 'r.qrels'}: the refined qrels drop 2 judgment(s)") and "q1" in err
    assert not (tmp_path / "p.json").exists()


def test_the_float_types_refuse_what_is_not_finite():
    for _, action in FLAGS:
        if isinstance(action.type, FloatFlag):
            for text in ("nan", "inf", "-inf"):
                with pytest.raises(argparse.ArgumentTypeError):
                    action.type(text)
