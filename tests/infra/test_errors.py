"""Error kinds: each failure is raised as the kind that says who can fix it, and every kind is still an
``MtrbenchError`` (one ``error:`` line, exit status 2 on the command line).

Each representative comes from a real call: a loader on a broken file, a task name that is not registered,
an LLM client against a local server that answers HTTP 500, a generator model folder that holds no model,
a bad flag value.
"""

from __future__ import annotations

import shutil

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main
from mtrbench.infra.errors import DataError, LLMError, ModelError, MtrbenchError, UserInputError

KEY_ENV = "MTRBENCH_ERRORS_TEST_KEY"


def raised(call) -> MtrbenchError:
    """The error ``call`` raises, caught as the base class the CLI catches."""
    try:
        call()
    except MtrbenchError as exc:  # every kind is caught here
        return exc
    raise AssertionError("no MtrbenchError raised")


def test_a_malformed_jsonl_file_is_a_data_error(native_mini, tmp_path):
    from mtrbench.data import load_task

    folder = tmp_path / "broken"
    shutil.copytree(native_mini, folder)
    conversations = folder / "conversations" / "test.jsonl"
    conversations.write_text(conversations.read_text() + '{"conversation_id": "c9", "messages": [\n')
    error = raised(lambda: load_task(str(folder)))
    assert type(error) is DataError
    assert "test.jsonl" in str(error) and "not valid JSON" in str(error)


def test_a_malformed_generations_line_is_a_data_error(tmp_path):
    from mtrbench.formats.generations import read_generations

    path = tmp_path / "generations.jsonl"
    path.write_text('{"qid": "q1", "answer": "a"}\n{"qid": "q2", "answer": 3}\n')
    error = raised(lambda: read_generations(path))
    assert type(error) is DataError and f"{path}:2" in str(error)


def test_an_unknown_task_name_is_a_user_input_error():
    from mtrbench.data import load_task

    error = raised(lambda: load_task("mtrbench-sampel"))
    assert type(error) is UserInputError
    assert "unknown task 'mtrbench-sampel'" in str(error) and "mtrbench-sample" in str(error)  # did you mean


def test_an_endpoint_answering_http_500_is_an_llm_error(monkeypatch):
    from mtrbench.llm import ChatClient, ChatRequest, JudgeConfig

    monkeypatch.setenv(KEY_ENV, "test-key")
    with ScriptedChatServer([Reply("server exploded", status=500)]) as server:
        judge = JudgeConfig(
            name="j",
            model="m",
            base_url=server.base_url,
            api_key_env=KEY_ENV,
            timeout_s=5.0,
            max_retries=1,
            concurrency=1,
            max_failures_in_a_row=2,
        )
        client = ChatClient(judge, None, backoff_base_s=0.01, backoff_max_s=0.02)
        requests = [ChatRequest(key=f"q{i}", messages=[{"role": "user", "content": "hi"}]) for i in range(5)]
        error = raised(lambda: client.run(requests, show_progress=False))
        assert server.request_count == 4  # 2 requests x (1 try + 1 retry), then the client stops
    assert type(error) is LLMError
    assert "2 requests in a row failed" in str(error) and "HTTP 500" in str(error)


def test_a_folder_without_a_model_is_a_model_error(tmp_path):
    from mtrbench.llm import ChatRequest, JudgeConfig
    from mtrbench.llm.hf import make_client

    empty = tmp_path / "no-model"
    empty.mkdir()
    client = make_client(JudgeConfig(name="g", model="g", base_url=f"hf://{empty}"))
    error = raised(
        lambda: client.run([ChatRequest(key="q", messages=[{"role": "user", "content": "hi"}])], show_progress=False)
    )
    assert type(error) is ModelError and "cannot load a causal LM" in str(error)


def test_every_kind_is_one_error_line_and_exit_status_2(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "generate",
            "--task",
            "mtrbench-sampel",
            "--oracle",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--yes",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: unknown task 'mtrbench-sampel'") and err.count("\n") == 1
    code = main(
        [
            "generate",
            "--task",
            str(native_mini),
            "--oracle",
            "--history",
            "window:3",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--yes",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: --history must be one of") and err.count("\n") == 1


@pytest.mark.parametrize("kind", [UserInputError, DataError, ModelError, LLMError])
def test_the_kinds_are_mtrbench_errors(kind):
    assert issubclass(kind, MtrbenchError)


def test_first_line_of_an_exception():
    from mtrbench.infra.errors import first_line

    assert first_line(RuntimeError("cannot load\nTraceback follows")) == "cannot load"
    assert first_line(OSError("  \n  disk full  \n")) == "disk full"
    # an exception without a message (torch raises some) still gives a line, never an IndexError
    assert first_line(RuntimeError()) == "RuntimeError"
    assert first_line(KeyError("")) == "''"
