"""`mtrbench simulate`'s flags (run, score, validate); the handlers are in mtrbench/cli/simulate.py, imported only
when the command runs."""

from __future__ import annotations

import argparse

from mtrbench.cli.common import Subparsers, add_data_options
from mtrbench.cli.flag_types import conversation_limit, positive_float, positive_int, timeout_seconds
from mtrbench.cli.flags.llm import add_max_failure_rate, add_run_flags, add_sampling_flags

DEFAULT_PROFILE = "cooperative,patient,expert"


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "simulate",
        help="sessions with simulated users: run them against a system, score them, validate the simulator",
        description="`simulate run`: an LLM plays a user with an information need and persona from a task and "
        "talks to a system under test (an mtrbench retriever, or your system behind the HTTP contract of "
        "docs/simulate.md) until satisfied or out of patience. `simulate score DIR`: session measures, with "
        "UMBRELA labels for passages the task does not judge. `simulate validate`: next-utterance prediction "
        "on real conversations and system-ranking agreement.",
    )
    actions = p.add_subparsers(dest="simulate_action", metavar="{run,score,validate}")
    p.set_defaults(simulate_parser=p)
    _add_run(actions.add_parser("run", help="simulate sessions against a system under test"))
    _add_score(actions.add_parser("score", help="session measures of a folder of transcripts"))
    _add_validate(actions.add_parser("validate", help="validate the simulator against real conversations"))
    return {"simulate": "mtrbench.cli.simulate:_cmd_simulate"}


def _add_user(p: argparse.ArgumentParser) -> None:
    user = p.add_argument_group("simulated user")
    user.add_argument("--task", default="mtrbench-sample", help="where the needs come from [mtrbench-sample]")
    add_data_options(user)  # type: ignore[arg-type]
    user.add_argument("--limit", type=conversation_limit, metavar="N", help="only the first N needs [all]")
    user.add_argument("--user-model", required=True, metavar="MODEL", help="the model playing the user")
    user.add_argument("--user-base-url", metavar="URL", help="its endpoint, or hf://MODEL [env OPENAI_BASE_URL]")
    user.add_argument("--max-tokens", type=positive_int, default=128, help="user message length limit [128]")
    add_sampling_flags(user, "simulated user")


def _add_run(p: argparse.ArgumentParser) -> None:
    _add_user(p)
    p.add_argument("--output-dir", required=True, help="transcripts and logs; a rerun resumes from them")
    p.add_argument("--personas", metavar="FILE.jsonl", help='personas by need: {"need_id", "persona": [...]} per line')
    p.add_argument("--profile", default=DEFAULT_PROFILE, help=f"cooperative|terse,patient|impatient,expert|novice "
                   f"[{DEFAULT_PROFILE}]")  # fmt: skip
    p.add_argument("--max-turns", type=positive_int, help="system turns before the user gives up [patient 8, "
                   "impatient 3]")  # fmt: skip
    p.add_argument("--quiet", action="store_true", help="no progress output")
    system = p.add_argument_group("system under test (an mtrbench retriever, or --system-url)")
    system.add_argument("--system-url", metavar="URL", help="an external system behind the HTTP contract")
    system.add_argument("--system-timeout", type=timeout_seconds, default=60.0, help="seconds per turn [60]")
    system.add_argument("--model", default="bm25", help="retriever: alias, HF id, local folder or bm25 [bm25]")
    system.add_argument("--history", default="full", help="retrieval history strategy, as eval's [full]")
    system.add_argument("--truncate", default="left", choices=["left", "right", "none"], help="as in eval [left]")
    system.add_argument("--device", default="cpu", help="retriever device [cpu]")
    system.add_argument("--top-k", type=positive_int, default=10, help="passages retrieved per turn [10]")
    system.add_argument("--generator-model", metavar="MODEL", help="answer from the passages with this model [none: "
                        "the top passage is the response]")  # fmt: skip
    system.add_argument("--generator-base-url", metavar="URL", help="its endpoint [env OPENAI_BASE_URL]")
    system.add_argument("--passages", type=positive_int, default=3, help="passages shown to the generator [3]")
    requests = p.add_argument_group("LLM requests")
    add_run_flags(requests)
    add_max_failure_rate(requests, "the user simulator or the system failed on more than this share of its turns "
                         "(transcripts are written either way)")  # fmt: skip


def _add_score(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="a `simulate run` output folder")
    p.add_argument("--k", type=positive_int, default=10, help="passages scored per turn [10]")
    p.add_argument("--discount-base", type=positive_float, default=4.0, help="sDCG's turn discount base b [4]")
    p.add_argument("--judge-model", metavar="MODEL", help="UMBRELA judge of unjudged passages [none: grade 0]")
    p.add_argument("--judge-base-url", metavar="URL", help="its endpoint [env OPENAI_BASE_URL]")
    p.add_argument(
        "--nuggets",
        action="store_true",
        help="also nugget scores of the answers by the judge (as `judge nuggets`: nuggets created from each "
        "turn's relevant passages) [off]",
    )
    p.add_argument(
        "--nuggets-from",
        choices=["passages", "responses"],
        default="passages",
        help="create the nuggets from each turn's relevant passages (the need's judgments) or from the need's "
        "gold responses [passages]",
    )
    p.add_argument(
        "--human-labels",
        metavar="FILE",
        help="people's 0-3 grades of judge-labelled passages ('<session>_<turn> | <doc id>', as JSONL {id, label} "
        "or id<TAB>label): a PPI interval of the mean label",
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")
    requests = p.add_argument_group("LLM requests")
    add_run_flags(requests)
    add_max_failure_rate(requests, "the judge failed on more than this share of its pairs or nugget steps")


def _add_validate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output-dir", help="where validation.json and the user log go (next-utterance prediction)")
    p.add_argument("--rankings", metavar="FILE.json", help='system-ranking agreement: {"real": {system: {need: '
                   'score}}, "simulated": {...}}')  # fmt: skip
    p.add_argument("--bootstrap", type=positive_int, default=1000, help="bootstrap samples over needs [1000]")
    p.add_argument("--encoder", default="minilm", help="embedding model for utterance similarity [minilm]")
    p.add_argument("--model", default="bm25", help="retriever for the relevant-passage overlap [bm25]")
    p.add_argument("--k", type=positive_int, default=10, help="top-k for the overlap [10]")
    p.add_argument("--history", default="full", help="how the prefix joins each message for the overlap, as eval's "
                   "--history (current: the message alone) [full]")  # fmt: skip
    p.add_argument("--quiet", action="store_true", help="no progress output")
    user = p.add_argument_group("next-utterance prediction (needs --user-model)")
    user.add_argument("--task", default="mtrbench-sample", help="real conversations [mtrbench-sample]")
    add_data_options(user)  # type: ignore[arg-type]
    user.add_argument("--limit", type=conversation_limit, metavar="N", help="only the first N conversations [all]")
    user.add_argument("--user-model", metavar="MODEL", help="the model playing the user")
    user.add_argument("--user-base-url", metavar="URL", help="its endpoint, or hf://MODEL [env OPENAI_BASE_URL]")
    user.add_argument("--max-tokens", type=positive_int, default=128, help="user message length limit [128]")
    add_sampling_flags(user, "simulated user")
    requests = p.add_argument_group("LLM requests")
    add_run_flags(requests)
    add_max_failure_rate(requests, "the user simulator failed on more than this share of its predictions")
