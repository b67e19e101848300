"""`mtrbench assess`'s flags; the handlers are in mtrbench/cli/assess.py, imported only when the command runs."""

from __future__ import annotations

from mtrbench.assess.defaults import QUERY_FORMS
from mtrbench.cli.common import Subparsers
from mtrbench.cli.flag_types import positive_int
from mtrbench.cli.flags.llm import add_llm_arguments


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "assess",
        help="fill a task's judgment holes: DREAM debate (two LLM agents, escalation) or UMBRELA 0-3 LLM labels",
        description="Pool the top-k of several runs, drop pairs the task already judges, and label the rest. "
        "--method dream (default): a debate between two LLM agents with opposing opening stances (DREAM); "
        "agreement gives the label, persistent disagreement goes to humans (escalations.csv/jsonl) or to an LLM "
        "adjudicator; writes refined qrels usable with `mtrbench eval --refined-qrels`. --method umbrela: one "
        "judge grades each pair 0-3 on UMBRELA's scale (TREC RAG 2024's pool filling); writes umbrela_qrels.trec "
        "(original judgments kept) and umbrela_qrels.trec.llm.json naming every LLM-made line with the model and "
        "its settings. Resumable: pairs finished in the log are skipped.",
    )
    p.add_argument(
        "--method",
        choices=("dream", "umbrela"),
        default="dream",
        help="dream: debate (yes/no labels, escalation); umbrela: one judge grades each pair 0-3 [dream]",
    )
    p.add_argument("task", help="task name (`mtrbench tasks`), card YAML or data folder")
    p.add_argument("--runs", nargs="+", metavar="RUN", help="TREC run files of the task to pool")
    p.add_argument("--depth", type=positive_int, default=10, help="top-k of each run pooled per query [10]")
    p.add_argument("--rounds", type=positive_int, default=2, help="maximum debate rounds R [2]")
    p.add_argument(
        "--agents",
        metavar="JUDGE[,JUDGE]",
        help="judge(s) playing Agent A (opens 'relevant') and Agent B (opens 'not relevant') "
        "[the first judge, for both]",
    )
    p.add_argument(
        "--prefilter",
        action="store_true",
        help="drop a pair before the debate when all pre-filter judges say it is irrelevant",
    )
    p.add_argument("--prefilter-judges", metavar="J1,J2,J3", help="[the first three judges of --judges]")
    p.add_argument(
        "--adjudicator",
        metavar="JUDGE",
        help="let this judge settle persistent disagreements instead of leaving them to humans",
    )
    p.add_argument(
        "--humans",
        metavar="FILE",
        help="merge human labels for escalated pairs: the filled escalations.csv (human_label column: "
        "yes/no or a grade) or JSONL with qid, doc_id, human_label",
    )
    p.add_argument(
        "--relevant-grade", type=positive_int, help="grade written for a 'relevant' label [the task's highest grade]"
    )
    p.add_argument(
        "--query-form",
        default="auto",
        choices=QUERY_FORMS,
        help="how the question is shown: auto = gold rewrite if the task has one, else the conversation",
    )
    p.add_argument("--split", help="split [the card's eval split]")
    p.add_argument("--data-dir", help="local copy of the task's data, laid out as published")
    p.add_argument("--corpus", help="external corpus, for tasks that do not ship one")
    p.add_argument("--output-dir", help="where the files go [results/assess/<task>]")
    p.add_argument("--quiet", action="store_true", help="no progress output")

    add_llm_arguments(p)
    return {"assess": "mtrbench.cli.assess:_cmd_assess"}
