"""Every recorded command line (`command` in result and score files) has its credentials masked: a URL's
``user:password@`` and the value of a flag named for a secret, while flags that only mention one keep their values."""

from __future__ import annotations

import json
from pathlib import Path

from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main
from mtrbench.llm.redact_command import redact_argv

PASSWORD = "pw-Zq81xMkT9"
GENERATIONS = Path(__file__).resolve().parents[1] / "data" / "generations-sample.jsonl"


def test_url_passwords_and_secret_flag_values_are_masked_and_nothing_else():
    argv = [
        "judge",
        "--llm-base-url",
        f"http://user:{PASSWORD}@127.0.0.1:8000/v1",
        f"--rewriter-base-url=https://u:{PASSWORD}@example.org/v1",
        "--api-key",
        "k-123",
        "--hf-token=t-456",
        "--client_secret",
        "s-789",
        "--api-key-env",
        "MY_KEY",
        "--max-tokens",
        "512",
        "--token-budget",
        "8192",
        "http://127.0.0.1:9/v1",
    ]
    assert redact_argv(argv) == [
        "judge",
        "--llm-base-url",
        "http://***@127.0.0.1:8000/v1",
        "--rewriter-base-url=https://***@example.org/v1",
        "--api-key",
        "***",
        "--hf-token=***",
        "--client_secret",
        "***",
        "--api-key-env",
        "MY_KEY",
        "--max-tokens",
        "512",
        "--token-budget",
        "8192",
        "http://127.0.0.1:9/v1",
    ]


def _assign_all_supported(body: dict) -> Reply:
    """The nugget assignment step: every nugget of the batch supported."""
    user = body["messages"][-1]["content"]
    nuggets = user.split("Nuggets:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return Reply(json.dumps(["support"] * len(nuggets)))


def test_judge_nuggets_writes_no_url_password_anywhere(tmp_path, monkeypatch):
    """`judge nuggets` against an endpoint behind Basic auth: the request carries the credentials, and no file
    of the output folder holds the password (scores.json's `command` once did)."""
    monkeypatch.setenv("MTRBENCH_REDACT_TEST_KEY", "unused")
    nuggets = tmp_path / "nuggets.jsonl"
    qids = [json.loads(line)["qid"] for line in GENERATIONS.read_text().splitlines() if line.strip()]
    nuggets.write_text(
        "".join(
            json.dumps({"query": q, "qid": q, "nuggets": [{"text": "the depth fact", "importance": "vital"}]}) + "\n"
            for q in qids
        )
    )
    out = tmp_path / "out"
    with ScriptedChatServer(_assign_all_supported, with_headers=False) as server:
        url = server.base_url.replace("://", f"://user:{PASSWORD}@", 1)
        argv = ["judge", "nuggets", str(GENERATIONS), "--task", "mtrbench-sample", "--nuggets", str(nuggets)]
        argv += ["--llm-model", "m", "--llm-base-url", url, "--api-key-env", "MTRBENCH_REDACT_TEST_KEY"]
        argv += ["--output-dir", str(out), "--no-llm-cache", "--yes", "--quiet", "--max-retries", "0"]
        assert main(argv) == 0
    assert server.request_count == len(qids)
    sent = [{k.lower(): v for k, v in h.items()}.get("authorization", "") for h in server.headers]
    assert sent and all(value.startswith("Basic ") for value in sent)  # the password reached the server
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written and all(PASSWORD.encode() not in p.read_bytes() for p in written)
    command = json.loads((out / "scores.json").read_text())["command"]
    assert any(word.startswith("http://***@127.0.0.1:") for word in command), command
