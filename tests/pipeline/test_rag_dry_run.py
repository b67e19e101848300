"""Every stage's model and endpoint is checked before any work: `rag` (dry run or not), `generate --dry-run` and
`judge run --dry-run` report an unusable endpoint with one `error:` line and exit 2, nothing sent and nothing
retrieved. The usable endpoint is a real scripted server on 127.0.0.1 that counts what reaches it; the unusable
ones are a port nobody listens on (bound, then closed), a scheme that is not http(s), a missing hf:// folder, and
an hf:// folder that holds no model (see mtrbench/llm/preflight.py).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main

KEY_ENV = "MTRBENCH_DRY_RUN_TEST_KEY"


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def rag_args(work: Path, mini: Path, generator_url: str, *extra: str) -> list[str]:
    return [
        "rag",
        "--model",
        "bm25",
        "--task",
        str(mini),
        "--output-dir",
        str(work / "results"),
        "--generator-model",
        "gen-m",
        "--generator-base-url",
        generator_url,
        "--api-key-env",
        KEY_ENV,
        "--yes",
        "--quiet",
        "--no-llm-cache",
        *extra,
    ]


def one_error(capsys) -> str:
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


@pytest.mark.parametrize(
    "judge_url, expected",
    [
        ("closed-port", "is unreachable"),
        ("ftp://127.0.0.1/v1", "must be an http(s) URL or hf://"),
        ("hf:///no/such/folder", "judge"),
    ],
)
@pytest.mark.parametrize("dry_run", [True, False])
def test_rag_refuses_an_unusable_judge_before_retrieval(
    judge_url, expected, dry_run, native_mini, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    url = closed_port_url() if judge_url == "closed-port" else judge_url
    with ScriptedChatServer(lambda body: Reply("an answer [1]")) as server:
        code = main(
            rag_args(
                tmp_path,
                native_mini,
                server.base_url,
                "--judge-model",
                "judge-m",
                "--judge-base-url",
                url,
                *(["--dry-run"] if dry_run else []),
            )
        )
        sent = server.request_count
    line = one_error(capsys)
    assert code == 2 and expected in line, line
    assert sent == 0 and not (tmp_path / "results").exists()  # no request, no retrieval


def test_rag_with_an_in_process_generator_that_holds_no_model_refuses_up_front(
    native_mini, tmp_path, monkeypatch, capsys
):
    """An hf:// folder without a model: one line before retrieval, not an error after it (the judge, defaulting to
    the generator, would run in-process too; tests/llm/test_real_llm.py runs that to the end)."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "model"
    folder.mkdir()
    code = main(rag_args(tmp_path, native_mini, f"hf://{folder}"))
    line = one_error(capsys)
    assert code == 2 and "the generator (gen-m)" in line and f"hf://{folder}" in line and "no config.json" in line
    assert not (tmp_path / "results").exists()


def test_a_missing_hf_folder_for_the_generator_is_one_line(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(rag_args(tmp_path, native_mini, f"hf://{tmp_path / 'absent'}", "--judge", "none", "--dry-run"))
    line = one_error(capsys)
    assert code == 2 and "the generator (gen-m)" in line and "does not exist" in line


def test_an_environment_base_url_with_another_scheme_is_caught(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", "ws://127.0.0.1:9/v1")  # JudgeConfig never sees it: only the preflight
    args = [
        "generate",
        "--task",
        str(native_mini),
        "--oracle",
        "--model",
        "gen-m",
        "--api-key-env",
        KEY_ENV,
        "--dry-run",
        "--output",
        str(tmp_path / "g.jsonl"),
    ]
    assert main(args) == 2
    assert "not an http(s) URL" in one_error(capsys)


def test_generate_and_judge_dry_runs_check_the_endpoint(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    url = closed_port_url()
    generate = [
        "generate",
        "--task",
        str(native_mini),
        "--oracle",
        "--model",
        "gen-m",
        "--base-url",
        url,
        "--api-key-env",
        KEY_ENV,
        "--dry-run",
        "--output",
        str(tmp_path / "g.jsonl"),
    ]
    assert main(generate) == 2
    assert "the generator (gen-m)" in one_error(capsys)
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"qid": "c1_1", "answer": "212 metres [1].", "passages": ["varn-depth"]}) + "\n")
    judge = [
        "judge",
        "run",
        str(answers),
        "--task",
        str(native_mini),
        "--judge",
        "verdict",
        "--llm-model",
        "judge-m",
        "--llm-base-url",
        url,
        "--api-key-env",
        KEY_ENV,
        "--dry-run",
        "--output-dir",
        str(tmp_path / "j"),
    ]
    assert main(judge) == 2
    assert "the judge (judge-m)" in one_error(capsys) and not (tmp_path / "j").exists()


def test_a_dry_run_with_usable_endpoints_sends_nothing_and_exits_0(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with ScriptedChatServer(lambda body: Reply("an answer [1]")) as server:
        assert main(rag_args(tmp_path, native_mini, server.base_url, "--judge-model", "judge-m", "--dry-run")) == 0
        assert server.request_count == 0
