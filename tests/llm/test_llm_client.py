"""The chat client against a real HTTP server on 127.0.0.1 (tests/llm_server.py) with scripted replies."""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import logging
import threading
import time

import pytest
from llm_server import Reply, ScriptedChatServer, sequence

from mtrbench.cli.app import Parser
from mtrbench.cli.flags.llm import add_llm_arguments
from mtrbench.cli.llm_flags import cache_from_args, judges_from_args
from mtrbench.infra.errors import MtrbenchError
from mtrbench.llm import (
    ChatClient,
    ChatRequest,
    JudgeConfig,
    ResponseCache,
    Usage,
    confirm_cost,
    estimate_cost,
    extract_rating,
    extract_yes_no,
    load_judges,
    print_dry_run,
)

KEY_ENV = "MTRBENCH_TEST_LLM_KEY"
SECRET = "mtrbench-secret-4f9c2a71e0d85b3c"  # no "sk-" prefix: the exact-key redaction is what is tested


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def make_judge(server: ScriptedChatServer, **overrides) -> JudgeConfig:
    settings = dict(
        name="judge-a",
        model="test-model",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
        timeout_s=5.0,
        max_retries=3,
        parse_retries=2,
        concurrency=4,
    )
    settings.update(overrides)
    return JudgeConfig(**settings)


def make_client(judge: JudgeConfig, cache: ResponseCache | None = None) -> ChatClient:
    return ChatClient(judge, cache, backoff_base_s=0.01, backoff_max_s=0.05)


def rating_request(key: str, text: str = "Rate this answer.") -> ChatRequest:
    return ChatRequest(
        key=key,
        messages=[
            {"role": "system", "content": "You are a strict judge."},
            {"role": "user", "content": f"{text} ({key})"},
        ],
        parse=lambda reply: extract_rating(reply, 1, 10),
    )


def first_user_message(body: dict) -> str:
    """The item's own question (a re-ask appends a repair turn after it)."""
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def run_one(client: ChatClient, request: ChatRequest):
    [result] = client.run([request], show_progress=False)
    return result


def test_well_formed_reply_is_parsed_and_counted():
    with ScriptedChatServer(
        [Reply("Covers 3 of 4 points.\nRating: [[7]]", prompt_tokens=13, completion_tokens=5)]
    ) as server:
        client = make_client(make_judge(server, max_tokens=300, temperature=0.2, extra_body={"seed": 0}))
        result = run_one(client, rating_request("q1"))
    assert (result.ok, result.value, result.error, result.attempts, result.cached) == (True, 7.0, None, 1, False)
    assert (result.prompt_tokens, result.completion_tokens) == (13, 5)
    assert client.usage == Usage(requests=1, cached=0, failures=0, items=1, prompt_tokens=13, completion_tokens=5)
    [body] = server.requests
    assert body["model"] == "test-model"
    assert body["messages"][1]["content"] == "Rate this answer. (q1)"
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.2, 300, 0)
    assert "response_format" not in body  # the request did not ask for JSON


def test_malformed_json_is_requested_again():
    replies = ['{"reason": "the dates differ", "response": ', '{"reason": "the dates differ", "response": "no"}']
    with ScriptedChatServer(replies) as server:
        client = make_client(make_judge(server))
        result = run_one(
            client, ChatRequest("q1", [{"role": "user", "content": "relevant?"}], parse=extract_yes_no, want_json=True)
        )
    assert (result.ok, result.value, result.attempts) == (True, False, 2)
    assert server.request_count == 2 and client.usage.requests == 2
    assert server.requests[0]["response_format"] == {"type": "json_object"}


def test_always_malformed_reply_is_a_failure_not_a_score():
    with ScriptedChatServer([Reply("I would rather not say.")]) as server:
        client = make_client(make_judge(server, parse_retries=2))
        result = run_one(client, rating_request("q1"))
    assert not result.ok and result.value is None
    assert result.attempts == 3 and server.request_count == 3
    assert result.error.startswith("unparseable after 3 attempts: no rating found")
    assert result.text == "I would rather not say."
    assert client.usage.failures == 1


def test_rating_out_of_range_is_retried_then_a_failure():
    with ScriptedChatServer(["Rating: [[12]]", "Rating: [[9]]"]) as server:
        result = run_one(make_client(make_judge(server)), rating_request("q1"))
    assert (result.ok, result.value, result.attempts) == (True, 9.0, 2)
    with ScriptedChatServer([Reply("Rating: [[12]]")]) as server:
        result = run_one(make_client(make_judge(server, parse_retries=1)), rating_request("q1"))
    assert not result.ok and result.value is None and result.attempts == 2
    assert result.error == "unparseable after 2 attempts: rating 12 outside 1-10"


def test_http_500_then_success():
    with ScriptedChatServer([Reply(status=500), "Rating: [[4]]"]) as server:
        client = make_client(make_judge(server))
        result = run_one(client, rating_request("q1"))
    assert (result.ok, result.value, result.attempts) == (True, 4.0, 2)
    assert server.request_count == 2 and client.usage.failures == 0


def test_persistent_500_fails_after_max_retries_plus_one():
    with ScriptedChatServer([Reply(status=503)]) as server:
        client = make_client(make_judge(server, max_retries=3))
        result = run_one(client, rating_request("q1"))
    assert not result.ok and result.error == "HTTP 503 after 4 attempts"
    assert result.attempts == 4 and server.request_count == 4 and client.usage.failures == 1


def test_other_4xx_is_not_retried():
    with ScriptedChatServer([Reply(status=404, content="model 'test-model' does not exist")]) as server:
        result = run_one(make_client(make_judge(server)), rating_request("q1"))
    assert server.request_count == 1 and result.attempts == 1
    assert result.error == "HTTP 404: model 'test-model' does not exist"


def test_429_waits_for_retry_after():
    arrivals: list[float] = []
    script = sequence([Reply(status=429, headers={"Retry-After": "1"}), "Rating: [[5]]"])

    def responder(body):
        arrivals.append(time.monotonic())
        return script(body)

    with ScriptedChatServer(responder) as server:
        result = run_one(make_client(make_judge(server)), rating_request("q1"))
    assert (result.ok, result.value, result.attempts) == (True, 5.0, 2)
    # the backoff alone would wait ~0.01 s; the server asked for 1 s
    assert 0.9 <= arrivals[1] - arrivals[0] < 5


def test_timeout_then_success():
    with ScriptedChatServer([Reply("Rating: [[3]]", delay_s=3.0), "Rating: [[6]]"]) as server:
        client = make_client(make_judge(server, timeout_s=0.5))
        started = time.monotonic()
        result = run_one(client, rating_request("q1"))
        elapsed = time.monotonic() - started
    assert (result.ok, result.value, result.attempts) == (True, 6.0, 2)
    # gave up on the slow reply instead of waiting for it: 0.5 s timeout + at least 0.5 s before the re-send
    assert 1.0 <= elapsed < 2.5


def test_persistent_timeout_is_reported():
    with ScriptedChatServer([Reply("Rating: [[3]]", delay_s=1.0)]) as server:
        result = run_one(make_client(make_judge(server, timeout_s=0.2, max_retries=1)), rating_request("q1"))
    assert not result.ok and result.error == "timeout after 2 attempts" and result.attempts == 2


def test_concurrency_limit_is_honoured_and_results_keep_request_order():
    lock = threading.Lock()
    state = {"in_flight": 0, "peak": 0}

    def responder(body):
        with lock:
            state["in_flight"] += 1
            state["peak"] = max(state["peak"], state["in_flight"])
        n = int(body["messages"][-1]["content"].split("(q")[1].rstrip(")"))
        time.sleep(0.25 if n == 0 else 0.1)  # the first request finishes last
        with lock:
            state["in_flight"] -= 1
        return Reply(f"Rating: [[{n % 10 + 1}]]")

    seen: list[str] = []
    requests = [rating_request(f"q{i}") for i in range(10)]
    with ScriptedChatServer(responder) as server:
        client = make_client(make_judge(server, concurrency=3))
        results = client.run(requests, show_progress=False, on_result=lambda r: seen.append(r.key))
    assert state["peak"] == 3
    assert [r.key for r in results] == [f"q{i}" for i in range(10)]
    assert [r.value for r in results] == [float(i % 10 + 1) for i in range(10)]
    assert sorted(seen) == sorted(r.key for r in results) and seen[0] != "q0"  # called as each finished


def test_cache_makes_a_second_run_free(tmp_path):
    cache_path = tmp_path / "llm.sqlite"
    requests = [rating_request(f"q{i}") for i in range(3)]
    with ScriptedChatServer([Reply("Rating: [[8]]", prompt_tokens=20, completion_tokens=4)]) as server:
        judge = make_judge(server)
        first = make_client(judge, ResponseCache(cache_path)).run(requests, show_progress=False)
        assert server.request_count == 3
        again = make_client(judge, ResponseCache(cache_path))
        second = again.run(requests, show_progress=False)
        assert server.request_count == 3  # nothing sent
        assert [r.value for r in second] == [r.value for r in first] == [8.0] * 3
        assert all(r.cached and r.attempts == 0 and r.prompt_tokens == 0 for r in second)
        assert again.usage == Usage(requests=0, cached=3, items=3)
        # another temperature is another question: not served from the cache
        warmer = make_client(dataclasses.replace(judge, temperature=0.7), ResponseCache(cache_path))
        assert not run_one(warmer, requests[0]).cached and server.request_count == 4
        # the server address is not part of the key
        moved = make_client(dataclasses.replace(judge, base_url="http://127.0.0.1:9/v1"), ResponseCache(cache_path))
        assert run_one(moved, requests[1]).cached
    stored = ResponseCache(cache_path).get(again.cache_key(requests[0]))
    assert stored["text"] == "Rating: [[8]]" and stored["prompt_tokens"] == 20 and stored["created"] > 0


def test_unparseable_replies_are_not_cached(tmp_path):
    cache_path = tmp_path / "llm.sqlite"
    with ScriptedChatServer([Reply("no idea")]) as server:
        client = make_client(make_judge(server, parse_retries=0), ResponseCache(cache_path))
        assert not run_one(client, rating_request("q1")).ok
        assert len(ResponseCache(cache_path)) == 0
    # a cached reply that the caller's parser now rejects is asked again
    with ScriptedChatServer([Reply("Rating: [[8]]"), Reply("Rating: [[3]]")]) as server:
        judge = make_judge(server)
        run_one(make_client(judge, ResponseCache(cache_path)), rating_request("q2"))
        strict = dataclasses.replace(rating_request("q2"), parse=lambda t: extract_rating(t, 1, 5))
        result = run_one(make_client(judge, ResponseCache(cache_path)), strict)
    assert (result.ok, result.cached, result.value) == (True, False, 3.0) and server.request_count == 2


def test_json_mode_falls_back_when_the_server_refuses_it():
    def responder(body):
        if "response_format" in body:
            return Reply(status=400, content="response_format is not supported by this server")
        return Reply('{"response": "yes"}')

    def ask(key):
        return ChatRequest(key, [{"role": "user", "content": "Answer in JSON"}], parse=extract_yes_no, want_json=True)

    with ScriptedChatServer(responder) as server:
        client = make_client(make_judge(server))
        first = run_one(client, ask("q1"))
        second = run_one(client, ask("q2"))
    assert (first.ok, first.value, first.attempts) == (True, True, 2)
    assert (second.ok, second.attempts) == (True, 1)
    assert ["response_format" in body for body in server.requests] == [True, False, False]
    with ScriptedChatServer(responder) as server:  # json_mode: true in the judges file means no fallback
        forced = run_one(make_client(make_judge(server, json_mode=True)), ask("q1"))
    assert not forced.ok and forced.error.startswith("HTTP 400") and server.request_count == 1
    with ScriptedChatServer(responder) as server:  # json_mode: false never sends it
        assert run_one(make_client(make_judge(server, json_mode=False)), ask("q1")).attempts == 1


def test_dry_run_prints_prompts_and_count_without_requests(capsys):
    requests = [rating_request(f"q{i}", text=f"Question number {i}?") for i in range(5)]
    with ScriptedChatServer([Reply("Rating: [[5]]")]) as server:
        judges = [make_judge(server), make_judge(server, name="judge-b", model="other-model")]
        print_dry_run(requests, judges, n_show=2)
        assert server.request_count == 0
    out = capsys.readouterr().out
    assert "Question number 0? (q0)" in out and "Question number 1? (q1)" in out
    assert "Question number 2?" not in out
    assert "5 requests x 2 judge(s) = 10 chat completions" in out


def test_cost_estimate_by_hand(tmp_path, capsys, monkeypatch):
    # 3 requests of 400 + 400 characters -> 200 prompt tokens each; 200 completion tokens each (default)
    requests = [
        ChatRequest(
            f"q{i}", [{"role": "system", "content": "s" * 400}, {"role": "user", "content": "u" * 399 + str(i)}]
        )
        for i in range(3)
    ]
    judge = JudgeConfig(name="gpt", model="gpt-4o", api_key_env=KEY_ENV)
    estimate = estimate_cost(requests, judge)
    assert (estimate.n_requests, estimate.cached) == (3, 0)
    assert (estimate.prompt_tokens, estimate.completion_tokens) == (600, 600)
    assert estimate.usd == pytest.approx((600 * 2.50 + 600 * 10.00) / 1e6)
    local = JudgeConfig(name="local", model="my-finetune", base_url="http://127.0.0.1:8000/v1")
    assert estimate_cost(requests, local).usd is None  # unknown price, not zero
    priced = dataclasses.replace(local, price_input_per_mtok=1.0, price_output_per_mtok=2.0)
    assert estimate_cost(requests, priced).usd == pytest.approx((600 * 1.0 + 600 * 2.0) / 1e6)
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put(ChatClient(judge).cache_key(requests[0]), {"text": "x"})
    cached = estimate_cost(requests, judge, cache)
    assert (cached.cached, cached.prompt_tokens) == (1, 400)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    with pytest.raises(MtrbenchError, match="--yes"):
        confirm_cost([(judge, estimate), (local, estimate_cost(requests, local))], yes=False)
    confirm_cost([(judge, estimate)], yes=True)
    out = capsys.readouterr().out
    assert "$0.01" in out and "unknown price" in out


def test_usage_cost():
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=500_000)
    assert usage.cost_usd(JudgeConfig(name="a", model="gpt-4o-mini")) == pytest.approx(0.15 + 0.30)
    assert usage.cost_usd(JudgeConfig(name="b", model="openai/gpt-4.1")) == pytest.approx(2.00 + 4.00)
    assert usage.cost_usd(JudgeConfig(name="c", model="local-llama")) is None


def test_api_key_never_leaks(tmp_path, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    cache_path = tmp_path / "llm.sqlite"
    scripts = {
        "ok": sequence([Reply(status=500), "Rating: [[6]]"]),
        "bad": sequence([Reply("no rating here")]),
        # a server that echoes the key back in an error message must not make us log or store it
        "echo": sequence([Reply(status=401, content=f"Incorrect API key provided: {SECRET}")]),
        "slow": sequence([Reply("Rating: [[2]]", delay_s=1.0)]),
    }

    def responder(body):
        return scripts[first_user_message(body).split("(")[1].rstrip(")")](body)

    requests = [rating_request(name) for name in scripts]
    with ScriptedChatServer(responder) as server:
        judge = make_judge(server, max_retries=1, timeout_s=0.3)
        cache = ResponseCache(cache_path)
        client = make_client(judge, cache)
        results = client.run(requests, show_progress=True)
        print(client, judge, client.usage, results)
        cache.close()
    assert [r.ok for r in results] == [True, False, False, False]
    assert "[redacted]" in results[2].error
    captured = capsys.readouterr()
    files = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("llm.sqlite"))
    places = {
        "logs": caplog.text,
        "stdout": captured.out,
        "stderr": captured.err,
        "cache": files.decode("latin-1"),
        "results": repr(results) + json.dumps([dataclasses.asdict(r) for r in results]),
        "repr": repr(client) + repr(judge),
        "request bodies": json.dumps(server.requests),
    }
    assert caplog.text and captured.err  # something was logged and a progress bar drawn
    for place, text in places.items():
        assert SECRET not in text, place
    assert len(server.headers) == 8  # ok: 500 + success, bad: 1 + 2 parse retries, echo: 1, slow: 1 + 1 retry
    for sent in server.headers:
        headers = {name.lower(): value for name, value in sent.items()}
        assert headers["authorization"] == f"Bearer {SECRET}"
        assert not any(SECRET in value for name, value in headers.items() if name != "authorization")


URL_USER, URL_PASSWORD = "alice", "pw-7Hq2@ZX91/k"  # '@' and '/' are percent-encoded in the URL
URL_USERINFO = "alice:pw-7Hq2%40ZX91%2Fk"
URL_BASE64 = base64.b64encode(f"{URL_USER}:{URL_PASSWORD}".encode()).decode()


def url_secrets() -> dict[str, str]:
    """Every form of the URL credentials that must never be shown or stored."""
    return {
        "password": URL_PASSWORD,
        "encoded password": "pw-7Hq2%40ZX91%2Fk",
        "user:password": f"{URL_USER}:{URL_PASSWORD}",
        "userinfo": URL_USERINFO,
        "base64": URL_BASE64,
        "base64 unpadded": URL_BASE64.rstrip("="),
    }


def echo_authorization(body: dict, headers: dict) -> Reply:
    """A careless server: its error bodies and replies repeat the Authorization header it got, decoded too."""
    sent = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
    decoded = base64.b64decode(sent.split()[-1]).decode() if sent.startswith("Basic ") else "?"
    password = decoded.partition(":")[2]
    echo = f"Authorization: {sent} (user:password {decoded}; password {password}; as sent {sent.split()[-1]})"
    kind = first_user_message(body).split("(")[1].rstrip(")")
    if kind == "ok":
        return Reply("Rating: [[6]]")
    if kind == "reply":  # unparseable, so the reply text ends up in the result
        return Reply(f"I cannot rate this. {echo}")
    return Reply(f"bad credentials. {echo}", status={"e401": 401, "e500": 500}[kind])


def test_credentials_in_the_base_url_are_sent_as_basic_auth_and_never_shown(tmp_path, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    with ScriptedChatServer(echo_authorization, with_headers=True) as server:
        with_credentials = server.base_url.replace("http://", f"http://{URL_USERINFO}@")
        judge = make_judge(server, base_url=with_credentials, max_retries=1, parse_retries=1)
        assert judge.base_url == server.base_url  # the URL kept (and written in summaries) has none
        cache = ResponseCache(tmp_path / "llm.sqlite")
        client = make_client(judge, cache)
        results = client.run([rating_request(k) for k in ("ok", "reply", "e401", "e500")], show_progress=True)
        print(client, judge, client.usage, results, [r.error for r in results])
        cache.close()
        sent = [{k.lower(): v for k, v in h.items()}["authorization"] for h in server.headers]
    assert [r.ok for r in results] == [True, False, False, False]
    assert len(sent) == 1 + 2 + 1 + 2 and set(sent) == {f"Basic {URL_BASE64}"}  # the credentials were used
    assert "[redacted]" in results[2].error and "[redacted]" in results[1].text
    assert judge.base_url_auth is not None and repr(judge.base_url_auth).endswith("password=***)")
    captured = capsys.readouterr()
    files = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    places = {
        "logs": caplog.text,
        "stdout": captured.out,
        "stderr": captured.err,
        "cache": files.decode("latin-1"),
        "results": repr(results) + json.dumps([dataclasses.asdict(r) for r in results]),
        "repr": repr(client) + repr(judge),
        "request bodies": json.dumps(server.requests),
    }
    assert caplog.text and captured.err
    for place, text in places.items():
        for form, secret in url_secrets().items():
            assert secret not in text, (place, form)


def test_credentials_in_openai_base_url_are_split_off_too(monkeypatch):
    with ScriptedChatServer(echo_authorization, with_headers=True) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url.replace("http://", f"http://{URL_USERINFO}@"))
        client = make_client(make_judge(server, base_url=None, max_retries=0))
        result = run_one(client, rating_request("e401"))
        [headers] = server.headers
    assert client.base_url == server.base_url and URL_PASSWORD not in repr(client)
    assert {k.lower(): v for k, v in headers.items()}["authorization"] == f"Basic {URL_BASE64}"
    assert result.error.startswith("HTTP 401: bad credentials.")
    assert not any(secret in result.error for secret in url_secrets().values())


def test_shown_urls_and_redaction_of_credential_forms(tmp_path):
    from mtrbench.llm.client import display_url
    from mtrbench.llm.redact import Redactor, split_userinfo

    assert display_url("http://u:p@host:8000/v1") == "http://***@host:8000/v1"
    assert display_url("https://api.example.com/v1") == "https://api.example.com/v1"
    assert split_userinfo("http://u:p%40ss@[::1]:8000/v1")[0] == "http://[::1]:8000/v1"
    assert split_userinfo("http://u:p%40ss@[::1]:8000/v1")[1].password == "p@ss"
    with pytest.raises(MtrbenchError) as info:
        JudgeConfig(name="j", model="m", base_url=f"ftp://{URL_USERINFO}@host/v1")
    assert URL_PASSWORD not in str(info.value) and "ftp://host/v1" in str(info.value)
    judges_file = tmp_path / "judges.json"  # the credentials field is set from base_url only
    judges_file.write_text(json.dumps({"judges": [{"model": "m", "base_url_auth": ["u", "p"]}]}))
    with pytest.raises(MtrbenchError, match="unknown field 'base_url_auth'"):
        load_judges(judges_file)
    redact = Redactor()  # no known secret: only what looks like one
    assert redact("proxy said: Authorization: Basic dXNlcjpodW50ZXIy") == "proxy said: Authorization: Basic [redacted]"
    assert redact("Basic authentication required") == "Basic authentication required"
    assert redact("token Bearer abcdefghijklmnop rejected") == "token Bearer [redacted] rejected"
    assert redact("cannot reach http://bob:hunter22@proxy:3128/v1") == "cannot reach http://***@proxy:3128/v1"


def test_missing_key_is_named_but_local_servers_need_none(monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    remote = JudgeConfig(name="r", model="gpt-4o", base_url="https://api.example.com/v1", api_key_env=KEY_ENV)
    with pytest.raises(MtrbenchError, match=KEY_ENV):
        ChatClient(remote)
    with ScriptedChatServer(["Rating: [[5]]"]) as server:
        result = run_one(make_client(make_judge(server)), rating_request("q1"))
    assert result.ok and {k.lower(): v for k, v in server.headers[0].items()}["authorization"].startswith("Bearer ")


def test_load_judges_yaml_and_json(tmp_path):
    yaml_file = tmp_path / "judges.yaml"
    yaml_file.write_text(
        "judges:\n"
        "  - {name: big, model: gpt-4o, concurrency: 4}\n"
        "  - name: local\n"
        "    model: Qwen/Qwen2.5-7B-Instruct\n"
        "    base_url: http://127.0.0.1:8000/v1\n"
        "    json_mode: false\n"
        "    extra_body: {seed: 0}\n"
        "prices:\n"
        "  gpt-4o: [3.0, 12.0]\n"
    )
    big, local = load_judges(yaml_file)
    assert (big.name, big.model, big.concurrency, big.base_url) == ("big", "gpt-4o", 4, None)
    assert (big.price_input_per_mtok, big.price_output_per_mtok) == (3.0, 12.0)  # the file overrides the table
    assert (local.base_url, local.json_mode, local.extra_body, local.max_retries) == (
        "http://127.0.0.1:8000/v1",
        False,
        {"seed": 0},
        5,
    )
    json_file = tmp_path / "judges.json"
    json_file.write_text(json.dumps({"judges": [{"model": "deepseek-chat", "api_key_env": "DEEPSEEK_API_KEY"}]}))
    [deepseek] = load_judges(json_file)
    assert (deepseek.name, deepseek.api_key_env) == ("deepseek-chat", "DEEPSEEK_API_KEY")


@pytest.mark.parametrize(
    "content, message",
    [
        ("judges:\n  - {modle: gpt-4o}\n", r"judges\[0\]: unknown field 'modle'. Did you mean: model"),
        ("judges:\n  - {name: x}\n", r"judges\[0\]: missing required field 'model'"),
        ("judges:\n  - {model: a}\n  - {model: b, concurrency: 0}\n", r"judges\[1\]: field 'concurrency' must be >= 1"),
        ("judges:\n  - {model: a, timeout_s: fast}\n", r"judges\[0\]: field 'timeout_s' must be a number"),
        ("judges:\n  - {model: a, api_key: sk-123}\n", r"judges\[0\]\.api_key: keys are never read from files"),
        ("judges:\n  - {model: a}\n  - {model: a}\n", r"judges\[1\]\.name 'a' is used twice"),
        ("judges: []\n", "'judges' must be a non-empty list"),
        ("judges:\n  - {model: a\n", "invalid YAML at line"),
        ("judges:\n  - {model: a}\nprices:\n  a: [1]\n", r"prices\.a must be \[input, output\]"),
    ],
)
def test_malformed_judges_file_names_file_and_field(tmp_path, content, message):
    path = tmp_path / "judges.yaml"
    path.write_text(content)
    with pytest.raises(MtrbenchError, match=message) as info:
        load_judges(path)
    assert str(path) in str(info.value)


def test_command_line_flags(tmp_path):
    parser = Parser()  # the CLI's parser: a value off a flag's range is refused as it is read (UsageError)
    add_llm_arguments(parser)
    args = parser.parse_args(
        [
            "--llm-model",
            "m",
            "--llm-base-url",
            "http://127.0.0.1:8000/v1",
            "--concurrency",
            "3",
            "--llm-cache",
            str(tmp_path / "x.sqlite"),
        ]
    )
    [judge] = judges_from_args(args)
    assert (judge.name, judge.model, judge.base_url, judge.concurrency, judge.api_key_env) == (
        "m",
        "m",
        "http://127.0.0.1:8000/v1",
        3,
        "OPENAI_API_KEY",
    )
    assert cache_from_args(args).path == tmp_path / "x.sqlite"
    assert cache_from_args(parser.parse_args(["--llm-model", "m", "--no-llm-cache"])) is None
    for bad in ([], ["--llm-model", "m", "--judges", "j.yaml"], ["--llm-model", "m", "--concurrency", "0"]):
        with pytest.raises(MtrbenchError):
            judges_from_args(parser.parse_args(bad))


def test_retry_after_header_forms():
    from email.utils import formatdate

    from mtrbench.llm.client import retry_after_seconds

    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25  # the finer one first
    assert 25 <= retry_after_seconds({"retry-after": formatdate(time.time() + 30, usegmt=True)}) <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({"retry-after": "-3"}) is None
    assert retry_after_seconds({}) is None


def test_cache_is_safe_across_threads_and_instances(tmp_path):
    path = tmp_path / "shared.sqlite"
    caches = [ResponseCache(path), ResponseCache(path)]  # like two processes sharing one file
    errors: list[BaseException] = []

    def writer(worker: int) -> None:
        try:
            cache = caches[worker % 2]
            for i in range(40):
                key = f"w{worker}-{i}"
                cache.put(key, {"text": f"reply {worker} {i}", "prompt_tokens": i})
                assert cache.get(key)["text"] == f"reply {worker} {i}"
        except BaseException as err:  # surfaced below; a thread's exception would otherwise be lost
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    reopened = ResponseCache(path)
    assert len(reopened) == 160
    assert reopened.get("w3-39") == {
        "text": "reply 3 39",
        "model": "",
        "prompt_tokens": 39,
        "completion_tokens": 0,
        "created": reopened.get("w3-39")["created"],
    }
    assert reopened.get("missing") is None


def test_a_dead_server_stops_the_run_after_max_failures_in_a_row():
    with ScriptedChatServer([Reply(status=503)]) as server:
        client = make_client(make_judge(server, max_retries=1, concurrency=1, max_failures_in_a_row=3))
        with pytest.raises(MtrbenchError) as caught:
            client.run([rating_request(f"q{i}") for i in range(10)], show_progress=False)
        # 3 items x (1 try + 1 retry), then nothing more is sent
        assert server.request_count == 6
    message = str(caught.value)
    assert "judge 'judge-a'" in message and "3 requests in a row failed" in message
    assert "last: HTTP 503 after 2 attempts" in message and "\n" not in message and SECRET not in message
    with pytest.raises(MtrbenchError):  # stays stopped: no further requests from this client
        run_one(client, rating_request("later"))


def test_failures_between_replies_do_not_stop_the_run():
    """Failures that alternate with replies (even malformed ones) never reach the limit."""
    script = [
        Reply(status=404, content="no"),
        "Rating: [[3]]",
        Reply(status=404, content="no"),
        "no rating here",
        Reply(status=404, content="no"),
        "Rating: [[5]]",
        Reply(status=404, content="no"),
    ]
    with ScriptedChatServer(sequence(script)) as server:
        client = make_client(make_judge(server, max_retries=0, parse_retries=0, concurrency=1, max_failures_in_a_row=2))
        results = client.run([rating_request(f"q{i}") for i in range(7)], show_progress=False)
    assert [r.ok for r in results] == [False, True, False, False, False, True, False]
    assert server.request_count == 7 and client.usage.failures == 5


def test_max_failures_in_a_row_zero_never_stops():
    with ScriptedChatServer([Reply(status=500)]) as server:
        client = make_client(make_judge(server, max_retries=0, concurrency=2, max_failures_in_a_row=0))
        results = client.run([rating_request(f"q{i}") for i in range(12)], show_progress=False)
    assert not any(r.ok for r in results) and server.request_count == 12


def test_the_timeout_default_follows_the_backend_and_an_explicit_one_wins(tmp_path):
    """60 s for an HTTP server, 900 s for an in-process hf:// batch (a CPU reading a long judge prompt takes
    minutes); a judges file's or --timeout's value replaces either; a non-positive one is refused."""
    from mtrbench.cli.llm_flags import request_overrides
    from mtrbench.llm.config import load_judges

    assert JudgeConfig(name="a", model="m", base_url="http://127.0.0.1:1/v1").effective_timeout_s == 60.0
    assert JudgeConfig(name="a", model="m").effective_timeout_s == 60.0  # the OpenAI default endpoint
    assert JudgeConfig(name="b", model="m", base_url="hf://smollm2").effective_timeout_s == 900.0
    assert JudgeConfig(name="c", model="m", base_url="hf://smollm2", timeout_s=5).effective_timeout_s == 5.0
    flags = argparse.Namespace(concurrency=None, timeout=12.5, max_retries=None)
    assert request_overrides(JudgeConfig(name="d", model="m", base_url="hf://x"), flags).effective_timeout_s == 12.5
    path = tmp_path / "judges.yaml"
    path.write_text("judges:\n  - {name: j, model: m, base_url: 'hf://x', timeout_s: 30}\n")
    assert load_judges(path)[0].effective_timeout_s == 30.0
    for bad in (0, -1, "soon", True):
        with pytest.raises(MtrbenchError, match="timeout_s"):
            JudgeConfig(name="e", model="m", timeout_s=bad)
