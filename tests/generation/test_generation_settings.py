"""Answers and verdicts carry the settings that made them, and are reused only under the same settings.

Counted at a real scripted server on 127.0.0.1: a rerun with the same settings asks nothing; a rerun with another
``--max-tokens`` (or judge temperature) asks every turn again into a new file (a ``note:`` says which), leaving the
first file as it was; a file written before settings were recorded is reused with a note naming what it lacks, and still
compared on what it records (the documented choice in mtrbench/generation/settings.py). The max_tokens each request carried is read from the request bodies.
"""

from __future__ import annotations

import json
from pathlib import Path

from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main
from mtrbench.generation.prompts import answer_prompt_hash

SECRET = "sk-test-SETTINGS-4e8a2c6b0d1f"
KEY_ENV = "MTRBENCH_SETTINGS_TEST_KEY"
TURNS, TURNS_WITH_GOLD = 5, 4  # tests/data/native-mini: c1_1..c1_5, c1_5 ("thanks!") without a gold passage
JUDGE_MARK = "[End of current question]"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class Server:
    """Answers generation prompts and gives CORRECT verdicts; keeps each generation request's max_tokens."""

    def __init__(self) -> None:
        self.generation_max_tokens: list[int] = []
        self.judge_temperatures: list[float] = []

    def __call__(self, body: dict) -> Reply:
        if JUDGE_MARK in body["messages"][-1]["content"]:
            self.judge_temperatures.append(body.get("temperature"))
            return Reply("Matches the reference.\nVerdict: [[CORRECT]]")
        self.generation_max_tokens.append(body.get("max_tokens"))
        return Reply("From the first passage [1].")


def rag(server: ScriptedChatServer, out: Path, mini: Path, max_tokens: int) -> list[str]:
    return [
        "rag",
        "--model",
        "bm25",
        "--task",
        str(mini),
        "--output-dir",
        str(out),
        "--generator-model",
        "gen-m",
        "--generator-base-url",
        server.base_url,
        "--judge",
        "none",
        "--measures",
        "token_f1",
        "--passages",
        "2",
        "--max-tokens",
        str(max_tokens),
        "--api-key-env",
        KEY_ENV,
        "--no-llm-cache",
        "--yes",
        "--quiet",
    ]


def test_rag_regenerates_under_other_max_tokens_and_reuses_under_the_same(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "results"
    asked = []
    for max_tokens in (96, 64, 64, 96):
        server_state = Server()
        with ScriptedChatServer(server_state) as server:
            assert main(rag(server, out, native_mini, max_tokens)) == 0, capsys.readouterr().err
        asked.append(server_state.generation_max_tokens)
    printed = capsys.readouterr()
    # first run: every turn at 96; 64: every turn again at 64; then nothing under either setting
    assert asked == [[96] * TURNS, [64] * TURNS, [], []]
    files = sorted(out.rglob("*.generations.jsonl"))
    assert len(files) == 2
    default = next(f for f in files if f.name.endswith(".gen-m.full.generations.jsonl"))
    other = next(f for f in files if f != default)
    assert {r["max_tokens"] for r in read_jsonl(default)} == {96} and len(read_jsonl(default)) == TURNS
    assert {r["max_tokens"] for r in read_jsonl(other)} == {64} and len(read_jsonl(other)) == TURNS
    notes = [line for line in printed.err.splitlines() if line.startswith("note:") and "other settings" in line]
    assert len(notes) == 2 and all("max_tokens 96 (now 64)" in n for n in notes)
    record = read_jsonl(other)[0]
    assert {k: record[k] for k in ("generator", "temperature", "seed", "top_k", "max_passage_chars", "history")} == {
        "generator": "gen-m",
        "temperature": 0.0,
        "seed": None,
        "top_k": 2,
        "max_passage_chars": None,
        "history": "full",
    }
    assert record["endpoint"].startswith("http://127.0.0.1:") and len(record["prompt_hash"]) == 12
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes()


def test_a_file_without_recorded_settings_is_reused_with_a_note_and_checked_on_what_it_records(
    native_mini, tmp_path, monkeypatch, capsys
):
    """Written before max tokens, temperature, seed, passage cut and endpoint were recorded: reused with a note
    naming what was not recorded (the documented choice in mtrbench/generation/settings.py), nothing asked; a
    setting it does record (top-k) still differing sends every turn to a new file."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "results" / "generations" / "native-mini" / "oracle"
    folder.mkdir(parents=True)
    old = folder / "gen-m.full.generations.jsonl"
    old_lines = "".join(
        json.dumps(
            {
                "qid": f"c1_{t}",
                "answer": "old [1]",
                "passages": ["varn-depth"],
                "generator": "gen-m",
                "history": "full",
                "source": "oracle",
                "history_source": "task",
                "top_k": 5,
                "prompt_hash": answer_prompt_hash("full"),
            }
        )
        + "\n"
        for t in range(1, TURNS_WITH_GOLD + 1)
    )
    old.write_text(old_lines)
    asked = []
    for top_k in ("5", "3"):
        state = Server()
        with ScriptedChatServer(state) as server:
            code = main(
                [
                    "generate",
                    "--task",
                    str(native_mini),
                    "--oracle",
                    "--model",
                    "gen-m",
                    "--base-url",
                    server.base_url,
                    "--api-key-env",
                    KEY_ENV,
                    "--no-llm-cache",
                    "--yes",
                    "--quiet",
                    "--max-tokens",
                    "80",
                    "--top-k",
                    top_k,
                ]
            )
        assert code == 0
        asked.append(state.generation_max_tokens)
    err = capsys.readouterr().err
    assert asked == [[], [80] * TURNS_WITH_GOLD]
    assert old.read_text() == old_lines
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert len(notes) == 2
    assert f"{TURNS_WITH_GOLD} record(s)" in notes[0] and "max_tokens" in notes[0] and "temperature" in notes[0]
    assert "top_k 5 (now 3)" in notes[1]
    [new] = [f for f in folder.glob("*.generations.jsonl") if f != old]
    assert [r["max_tokens"] for r in read_jsonl(new)] == [80] * TURNS_WITH_GOLD
    assert {r["top_k"] for r in read_jsonl(new)} == {3}


def test_judge_verdicts_carry_settings_and_another_temperature_asks_again(tmp_path, native_mini, monkeypatch, capsys):
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.chdir(tmp_path)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(
            json.dumps({"qid": f"c1_{t}", "answer": f"answer {t} [1]", "passages": ["varn-depth"], "generator": "g"})
            + "\n"
            for t in range(1, TURNS + 1)
        )
    )
    out = tmp_path / "judge"
    asked = []
    for temperature in (0.0, 0.0, 0.5):
        state = Server()
        with ScriptedChatServer(state) as server:
            judges = tmp_path / "judges.json"
            judges.write_text(
                json.dumps(
                    {
                        "judges": [
                            {
                                "name": "j",
                                "model": "judge-m",
                                "base_url": server.base_url,
                                "api_key_env": KEY_ENV,
                                "temperature": temperature,
                            }
                        ]
                    }
                )
            )
            assert (
                main(
                    [
                        "judge",
                        "run",
                        str(answers),
                        "--task",
                        str(native_mini),
                        "--judge",
                        "verdict",
                        "--measures",
                        "",
                        "--judges",
                        str(judges),
                        "--output-dir",
                        str(out),
                        "--no-llm-cache",
                        "--yes",
                        "--quiet",
                    ]
                )
                == 0
            )
        asked.append(state.judge_temperatures)
    err = capsys.readouterr().err
    assert asked == [[0.0] * TURNS, [], [0.5] * TURNS]
    [note] = [line for line in err.splitlines() if line.startswith("note:") and "other settings" in line]
    assert "temperature 0.0 (now 0.5)" in note
    [moved] = [p for p in tmp_path.iterdir() if p.name.startswith("judge.")]
    for folder, temperature in ((out, 0.0), (moved, 0.5)):
        verdicts = read_jsonl(folder / "verdicts.jsonl")
        assert len(verdicts) == TURNS and {v["settings"]["temperature"] for v in verdicts} == {temperature}
        assert {v["settings"]["model"] for v in verdicts} == {"judge-m"}
        assert all(len(v["prompt_hash"]) == 16 for v in verdicts)


def test_generator_temperature_and_seed_are_sent_recorded_and_compared(native_mini, tmp_path, monkeypatch, capsys):
    """generate --temperature 0.7 --seed 3: every request carries both, every answer records both; the same flags
    again ask nothing; another temperature into the same --output file is refused before any request (the file
    keeps one set of settings), and into another file asks every turn at the new temperature."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    out = tmp_path / "answers.jsonl"
    bodies: list[dict] = []

    def respond(body: dict) -> Reply:
        bodies.append(body)
        return Reply("From the first passage [1].")

    def args(*sampling: str, output: Path = out) -> list[str]:
        return [
            "generate",
            "--task",
            str(native_mini),
            "--oracle",
            "--model",
            "gen",
            "--base-url",
            server.base_url,
            "--api-key-env",
            KEY_ENV,
            "--output",
            str(output),
            "--no-llm-cache",
            "--yes",
            "--quiet",
            *sampling,
        ]

    with ScriptedChatServer(respond) as server:
        assert main(args("--temperature", "0.7", "--seed", "3")) == 0
        assert [(b["temperature"], b["seed"]) for b in bodies] == [(0.7, 3)] * TURNS_WITH_GOLD
        assert main(args("--temperature", "0.7", "--seed", "3")) == 0
        assert len(bodies) == TURNS_WITH_GOLD  # the same settings: nothing asked
        capsys.readouterr()
        assert main(args("--temperature", "0.2", "--seed", "3")) == 2
        assert main(args("--temperature", "3")) == 2  # outside [0, 2]: one error line, nothing asked
        assert len(bodies) == TURNS_WITH_GOLD
        assert main(args("--temperature", "0.2", "--seed", "3", output=tmp_path / "other.jsonl")) == 0
        assert [(b["temperature"], b["seed"]) for b in bodies[TURNS_WITH_GOLD:]] == [(0.2, 3)] * TURNS_WITH_GOLD
    err = capsys.readouterr().err
    assert "temperature 0.7 (now 0.2)" in err and "error: --temperature must be between 0 and 2, got 3" in err
    assert {(r["temperature"], r["seed"]) for r in read_jsonl(out)} == {(0.7, 3)}  # the first file as it was
    assert {(r["temperature"], r["seed"]) for r in read_jsonl(tmp_path / "other.jsonl")} == {(0.2, 3)}


def test_rewriter_temperature_is_sent_and_names_its_own_result(native_mini, tmp_path, monkeypatch):
    """eval --rewriter-temperature 0.2: the rewrite requests carry it, the result records it in the rewriter's
    identity and lives in its own folder: a run at temperature 0 neither skips it as finished nor replaces it."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    temperatures: list[float] = []

    def respond(body: dict) -> Reply:
        temperatures.append(body["temperature"])
        return Reply("Rewrite: " + body["messages"][-1]["content"].rsplit("Last question: ", 1)[-1])

    with ScriptedChatServer(respond) as server:
        base = [
            "eval",
            "--task",
            str(native_mini),
            "--model",
            "bm25",
            "--history",
            "rewrite:llm",
            "--output-dir",
            str(tmp_path / "results"),
            "--rewriter-model",
            "rw",
            "--rewriter-base-url",
            server.base_url,
            "--api-key-env",
            KEY_ENV,
            "--no-llm-cache",
            "--yes",
            "--quiet",
        ]
        assert main([*base, "--rewriter-temperature", "0.2"]) == 0
        assert main([*base, "--rewriter-temperature", "0.2"]) == 0  # finished: nothing asked
        assert main(base) == 0
    assert temperatures == [0.2] * 4 + [0.0] * 4  # 4 turns with history (c1_1 has none)
    results = {p.parent.name: json.loads(p.read_text()) for p in (tmp_path / "results").rglob("native-mini.json")}
    assert len(results) == 2
    recorded = {
        name.split("rewriter=")[1]: r["mtrbench"]["settings"]["rewriter"].get("temperature")
        for name, r in results.items()
    }
    assert recorded == {"rw_t0.2": 0.2, "rw": None}  # 0 is not recorded: results from before read as made at 0
