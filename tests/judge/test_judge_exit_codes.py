"""`audit` and `assess` exit 1 when a judge failed on more than --max-failure-rate of its items.

The judges talk to a real chat-completions server on 127.0.0.1 (tests/llm_server.py) that fails every
request with HTTP 500; retries are off and the circuit breaker is set past the item count, so every
item is asked once and ends as a failure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main

# native-mini, 5 user turns, c1_5 without gold: the audit asks 5 alignment items (c1_4 has two gold
# documents), 4 completeness, 4 faithfulness, 4 quality = 17 items per judge.
AUDIT_ITEMS = 17


def judges_file(path: Path, base_url: str, names: list[str]) -> str:
    judges = [
        {
            "name": n,
            "model": n,
            "base_url": base_url,
            "api_key_env": "MTRBENCH_EXIT_TEST_KEY",
            "max_retries": 0,
            "parse_retries": 0,
            "max_failures_in_a_row": 1000,
            "concurrency": 2,
            "timeout_s": 20,
        }
        for n in names
    ]
    path.write_text(json.dumps({"judges": judges}))
    return str(path)


def always(status: int):
    return lambda body: Reply("server error", status=status)


def audit_args(native_mini, tmp_path, judges: str, *extra: str) -> list[str]:
    return [
        "audit",
        str(native_mini),
        "--judges",
        judges,
        "--negatives",
        "2",
        "--output-dir",
        str(tmp_path / "audit"),
        "--no-llm-cache",
        "--yes",
        "--quiet",
        *extra,
    ]


def test_audit_exits_1_when_every_request_failed(native_mini, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MTRBENCH_EXIT_TEST_KEY", "k")
    with ScriptedChatServer(always(500)) as server:
        code = main(audit_args(native_mini, tmp_path, judges_file(tmp_path / "j.json", server.base_url, ["judge"])))
        assert server.request_count == AUDIT_ITEMS
    err = capsys.readouterr().err
    assert code == 1
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert f"judge 'judge' failed on {AUDIT_ITEMS} of {AUDIT_ITEMS} items" in line and "Traceback" not in err
    # the outputs are still written: the summary counts every item as a failure
    summary = json.loads((tmp_path / "audit" / "summary.json").read_text())
    assert sum(s["judge"]["failures"] for s in summary["aggregates"].values()) == AUDIT_ITEMS


def test_audit_rate_threshold_is_per_judge_and_inclusive(native_mini, tmp_path, monkeypatch, capsys):
    """judge-ok answers every item, judge-bad none: only judge-bad is named. --max-failure-rate 1 accepts
    even 17 of 17 (the rate must be *more than* the share)."""
    monkeypatch.setenv("MTRBENCH_EXIT_TEST_KEY", "k")

    def respond(body):
        if body["model"] == "judge-bad":
            return Reply("down", status=500)
        content = body["messages"][-1]["content"]
        return Reply("Document ID: [1]" if "Documents:" in content else "Rating: 3")

    with ScriptedChatServer(respond) as server:
        judges = judges_file(tmp_path / "j.json", server.base_url, ["judge-ok", "judge-bad"])
        assert main(audit_args(native_mini, tmp_path, judges)) == 1
        err = capsys.readouterr().err
        assert [line.split("'")[1] for line in err.splitlines() if line.startswith("error:")] == ["judge-bad"]
        assert main(audit_args(native_mini, tmp_path, judges, "--max-failure-rate", "1")) == 0
    assert main(audit_args(native_mini, tmp_path, judges, "--max-failure-rate", "1.5")) == 2
    assert "--max-failure-rate is a share between 0 and 1" in capsys.readouterr().err


def test_assess_exits_1_when_every_request_failed(native_mini, tmp_path, capsys):
    import importlib.util

    # the assess tests' own argument builder, loaded by path: it lives in tests/assess/
    spec = importlib.util.spec_from_file_location(
        "assess_tests", Path(__file__).resolve().parents[1] / "assess" / "test_assess.py"
    )
    assess_tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(assess_tests)
    assess_args = assess_tests.assess_args

    with ScriptedChatServer(always(500)) as server:
        args = assess_args(native_mini, tmp_path, server.base_url)
        args[args.index("--judges") + 1] = judges_file(tmp_path / "dead.json", server.base_url, ["agent"])
        code = main(args)
        sent = server.request_count
    err = capsys.readouterr().err
    assert code == 1
    # 8 pooled pairs to assess (test_assess.PAIRS), both agents open each debate: 16 items; all fail in round 1,
    # so no round 2 is asked
    assert sent == 16
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert "judge 'agent' failed on 16 of 16 items" in line


@pytest.mark.parametrize(
    "failed,total,limit,over",
    [
        (0, 8, 0.25, False),
        (2, 8, 0.25, False),
        (3, 8, 0.25, True),
        (8, 8, 1.0, False),
        (1, 8, 0.0, True),
        (0, 0, 0.0, False),
    ],
)
def test_over_limit_means_strictly_more_than_the_share(failed, total, limit, over):
    from mtrbench.llm.failure_rate import JudgeFailures, over_limit

    assert bool(over_limit([JudgeFailures("j", failed, total)], limit)) is over
