"""UMBRELA grades off the 0-3 scale (``-1``, ``2.5``) are malformed replies: asked again, then failed; never read as
the digit inside them (``-1`` as 1, ``2.5`` as 2). Against the scripted chat-completions server on 127.0.0.1."""

from __future__ import annotations

import pytest
from llm_server import Reply, ScriptedChatServer

from mtrbench.assess.umbrela_prompt import parse_grade_reply
from mtrbench.cli import main
from mtrbench.formats.qrels import read_qrels

# passage snippet -> (doc id, what the scripted judge replies about it)
REPLIES = {
    "lives only in Lake Varnholm": ("varn-fish", "##final score: -1"),
    "was designed by Hedda Lorne": ("orrin-design", "##final score: 2.5"),
    "opened to traffic in 1931": ("orrin-open", "##final score: 1"),
}
# c1_1 "How deep is Lake Varnholm?": native-mini judges only varn-depth for it, so all three pairs are unjudged
RUN = ["c1_1 Q0 varn-fish 1 3 r", "c1_1 Q0 orrin-design 2 2 r", "c1_1 Q0 orrin-open 3 1 r"]


def respond(body: dict) -> Reply:
    passage = body["messages"][-1]["content"].split("\nPassage: ", 1)[1]
    return Reply(next(reply for snippet, (_, reply) in REPLIES.items() if snippet in passage))


def test_grades_off_the_scale_are_asked_again_then_failed(native_mini, tmp_path, capsys):
    run = tmp_path / "run.trec"
    run.write_text("\n".join(RUN) + "\n")
    args = ["assess", str(native_mini), "--method", "umbrela", "--runs", str(run), "--depth", "3"]
    args += ["--llm-model", "judge-m", "--output-dir", str(tmp_path / "out"), "--no-llm-cache", "--yes", "--quiet"]
    with ScriptedChatServer(respond) as server:
        code = main([*args, "--llm-base-url", server.base_url, "--max-failure-rate", "1"])
        # -1 and 2.5: the question and two re-asks each (--parse-retries 2); the valid 1: one question
        assert server.request_count == 3 + 3 + 1
    assert code == 0
    assert "1 labelled (3 asked now), 2 failed" in capsys.readouterr().out
    qrels = read_qrels(tmp_path / "out" / "umbrela_qrels.trec")
    assert qrels["c1_1"] == {"varn-depth": 2, "orrin-open": 1}  # the task's own line, then the one valid grade


@pytest.mark.parametrize("text", ["##final score: -1", "##final score: 2.5", "-1", "2.5", "final score: 3.0", "+2"])
def test_a_grade_written_off_the_scale_is_refused(text):
    with pytest.raises(ValueError, match="final score"):
        parse_grade_reply(text)
