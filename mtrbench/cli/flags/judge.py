"""`mtrbench judge`'s flags; the handlers are in mtrbench/cli/judge.py, imported only when the command runs."""

from __future__ import annotations

import argparse

from mtrbench.cli.common import Subparsers, add_data_options
from mtrbench.cli.flag_types import non_negative_int, positive_int
from mtrbench.cli.flags.choices import DEFAULT_VITAL_GRADE
from mtrbench.cli.flags.choices import NUGGET_FORMATS as FORMATS
from mtrbench.cli.flags.llm import add_llm_arguments
from mtrbench.formats.mtrag_modes import MODES
from mtrbench.judge.defaults import DEFAULT_MAX_PASSAGE_CHARS, DEFAULT_MEASURES
from mtrbench.judge.mtrag.names import ALL_METRICS, OFFICIAL_MODEL


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "judge",
        help="score generated answers: BLEU-1, ROUGE-L, citations, F1/EM, LLM judges, RAGAlign; RAD-Bench tables",
        description="`judge run GENERATIONS.jsonl --task T`: reference measures per turn, optionally "
        "an LLM judge (RAD-Bench 1-10 rating or a correct/incorrect verdict) and RAGAlign. "
        "`judge rad-bench --judgments DIR`: RAD-Bench's per-scenario table from judgment "
        "files; `judge rad-bench --answers DIR --llm-model M`: rate RAD-Bench answers. "
        "`judge nuggets`: nugget evaluation as TREC RAG and iKAT run it (docs/nuggets.md).",
    )
    actions = p.add_subparsers(dest="judge_action", metavar="{run,rad-bench,mtrag,nuggets}")
    p.set_defaults(judge_parser=p)

    r = actions.add_parser("run", help="score a generations file against a task")
    r.add_argument("generations", help="generations JSONL: one {qid, answer, passages, generator, ...} per turn")
    r.add_argument("--task", required=True, help="task name (`mtrbench tasks`), card YAML or data folder")
    add_data_options(r)
    r.add_argument(
        "--measures",
        default=",".join(DEFAULT_MEASURES),
        help=f"reference measures, comma list ('' for none) [{','.join(DEFAULT_MEASURES)}]",
    )
    r.add_argument(
        "--judge",
        choices=["rating", "verdict"],
        help="also ask an LLM judge: RAD-Bench's reference-guided 1-10 rating, or correct/incorrect",
    )
    r.add_argument(
        "--scenario",
        default="RR",
        choices=["RS", "RR", "TR"],
        help="RAD-Bench prompt family for --judge rating: RS synthesis, RR reasoning over the passages "
        "shown, TR travel [RR]",
    )
    r.add_argument("--ragalign", help="with --judge verdict: RAGAlign measures, e.g. RAGAlign@10,RAGAlign@10(of=nDCG)")
    r.add_argument("--run", dest="run_file", help="retrieval run (TREC) for RAGAlign [the passages shown, in order]")
    r.add_argument(
        "--max-passage-chars",
        type=non_negative_int,
        default=DEFAULT_MAX_PASSAGE_CHARS,
        help=f"cut each passage shown to the judge, 0 = never [{DEFAULT_MAX_PASSAGE_CHARS}]",
    )
    r.add_argument("--output-dir", help="judge log, verdicts/ratings and summary [results/judge/<task>]")
    r.add_argument("--output", help="results JSON [<output-dir>/scores.json]")
    r.add_argument("--quiet", action="store_true", help="no progress bars, no per-turn table")
    r.add_argument(
        "--human-labels",
        metavar="FILE",
        help="with --judge: human ratings/verdicts of some turns (JSONL {id, label} or TSV id<TAB>label; id = "
        "turn id, or <generator>|<turn id>): print the PPI mean and 95%% interval next to the judge's mean",
    )
    add_llm_arguments(r)

    b = actions.add_parser("rad-bench", help="RAD-Bench: Table 2 from judgment files, or rate answer files")
    source = b.add_mutually_exclusive_group(required=True)
    source.add_argument("--judgments", help="judgment JSONL file, or a RAD-Bench folder (model_judgment/*.jsonl)")
    source.add_argument(
        "--answers",
        help="RAD-Bench data folder with questions.jsonl, reference_answer/ and "
        "model_answer/: rate the answers with an LLM judge",
    )
    b.add_argument("--models", help="with --answers: comma list of models to rate [all]")
    b.add_argument(
        "--drop-unparsable",
        action="store_true",
        help="leave out released ratings of -1 (unparsable) instead of averaging them as RAD-Bench does",
    )
    b.add_argument(
        "--max-passage-chars",
        type=non_negative_int,
        default=0,
        help="with --answers: cut each context shown to the judge, 0 = never [0]",
    )
    b.add_argument("--output-dir", help="with --answers: judge log, judgments and summary [results/judge/rad-bench]")
    b.add_argument("--output", help="table JSON [with --judgments: required; with --answers: <output-dir>/table.json]")
    b.add_argument("--quiet", action="store_true", help="no progress bars")
    add_llm_arguments(b)
    _add_mtrag_parser(actions)
    _add_nuggets_parser(actions)
    return {"judge": "mtrbench.cli.judge:_cmd_judge"}


def _add_mtrag_parser(actions: argparse._SubParsersAction) -> None:
    m = actions.add_parser(
        "mtrag",
        help="MTRAG/MTRAGEval generation metrics under their official names",
        description="Score an MTRAGEval prediction file (generation tasks with `predictions`) "
        "as MTRAG's official scripts do: Recall, RougeL_stemFalse, BertscoreP/R, "
        "BertKPrec, Extractiveness_RougeL, Length, RB_agg; with an LLM judge "
        "also RB_llm, RL_F, idk_eval, underspecified_eval and the conditioned "
        "*_idk variants. Writes <output-dir>/metrics.jsonl and summary.json.",
    )
    m.add_argument("predictions", help="prediction JSONL (task_id, input, contexts, targets, predictions, ...)")
    m.add_argument(
        "--metrics",
        help=f"comma list of official names [{','.join(ALL_METRICS[:7])}, plus "
        f"{','.join(ALL_METRICS[7:])} when a judge is given]",
    )
    m.add_argument("--output-dir", help="metrics.jsonl, summary.json, LLM log [results/judge/mtrag/<file stem>]")
    m.add_argument(
        "--bertscore-model", default=OFFICIAL_MODEL, help=f"any Hugging Face id or folder [{OFFICIAL_MODEL}]"
    )
    m.add_argument(
        "--bertscore-layers", type=positive_int, help="layer to read [bert-score's for its models, else the last]"
    )
    m.add_argument("--bertscore-baseline", help="rescaling baseline TSV for a model bert-score has none for")
    m.add_argument("--bertscore-no-rescale", action="store_true", help="no baseline rescaling (not official)")
    m.add_argument("--bertscore-batch-size", type=positive_int, default=16, help="pairs per BERTScore batch [16]")
    m.add_argument("--device", help="BERTScore device [cuda when available]")
    m.add_argument(
        "--check-format",
        choices=MODES,
        metavar="MODE",
        help=f"only run MTRAGEval's format check ({', '.join(MODES)}): one error line per problem",
    )
    m.add_argument("--input-file", help="with --check-format: the task input file whose task ids must match")
    m.add_argument("--quiet", action="store_true", help="no progress bars")
    m.add_argument(
        "--human-labels",
        metavar="FILE",
        help="human labels of some tasks (JSONL {id: task_id, label} or TSV task_id<TAB>label): the PPI mean "
        "and 95%% interval of --human-metric next to the judge's mean",
    )
    m.add_argument(
        "--human-metric",
        default="RB_llm",
        choices=("RB_llm", "idk_eval", "underspecified_eval"),
        help="what the human labels rate: RB_llm (a 1-10 rating, read as /10), idk_eval or underspecified_eval "
        "(yes/no) [RB_llm]",
    )
    add_llm_arguments(m)


def _add_nuggets_parser(actions: argparse._SubParsersAction) -> None:
    n = actions.add_parser(
        "nuggets",
        help="nugget evaluation (TREC RAG, iKAT): strict_vital, vital, strict_all, all per answer, turn and run",
        description="`judge nuggets GENERATIONS... --task T`: create nuggets from each turn's judged relevant "
        "passages with an LLM (or take --nuggets FILE), label each answer's support of each nugget, and score "
        "strict_vital, vital, strict_all and all (nuggetizer's definitions) per answer, turn position, topic "
        "switch, conversation and run; assignments are written in nuggetizer's format, one file per run. "
        "`judge nuggets --assignments FILE...`: score existing assignment files, no LLM.",
    )
    n.add_argument("generations", nargs="*", help="generations JSONL files, one per run (system)")
    n.add_argument(
        "--task",
        help="task name, card YAML or data folder (needed with GENERATIONS; with "
        "--assignments it adds the per-turn breakdowns and checks the turns)",
    )
    add_data_options(n)
    n.add_argument("--assignments", nargs="+", metavar="FILE", help="nuggetizer assignment JSONL files, one per run")
    n.add_argument(
        "--nuggets",
        metavar="FILE",
        help="nuggets: nuggetizer JSONL or iKAT 2024 gold nugget JSON [with GENERATIONS: created by the LLM]",
    )
    n.add_argument("--nuggets-format", choices=FORMATS, default="auto", help="layout of --nuggets [auto]")
    n.add_argument(
        "--vital-grade",
        type=non_negative_int,
        default=DEFAULT_VITAL_GRADE,
        help=f"iKAT gold nuggets graded this or higher are vital, the others okay [{DEFAULT_VITAL_GRADE}]",
    )
    n.add_argument(
        "--responses",
        metavar="FILE",
        help="with --assignments: iKAT participant responses JSON; every assigned answer must be one of them",
    )
    n.add_argument("--output", help="scores JSON [with GENERATIONS: <output-dir>/scores.json]")
    n.add_argument(
        "--output-dir",
        help="with GENERATIONS: nuggets.jsonl, assignments/<run>.jsonl, the LLM log [results/judge/nuggets/<task>]",
    )
    n.add_argument("--max-nuggets", type=positive_int, default=30, help="created nuggets per turn, at most [30]")
    n.add_argument("--passage-batch", type=positive_int, default=10, help="relevant passages per creation request [10]")
    n.add_argument("--label-batch", type=positive_int, default=10, help="nuggets per vital/okay request [10]")
    n.add_argument("--assign-batch", type=positive_int, default=10, help="nuggets per assignment request [10]")
    n.add_argument(
        "--max-passage-chars",
        type=non_negative_int,
        default=DEFAULT_MAX_PASSAGE_CHARS,
        help=f"cut each passage shown to the LLM, 0 = never [{DEFAULT_MAX_PASSAGE_CHARS}]",
    )
    n.add_argument(
        "--citations",
        action="store_true",
        help="also judge citation support: each cited passage of "
        "each answer sentence, full/partial/no support (TREC RAG 2024), with support precision and recall",
    )
    n.add_argument(
        "--human-labels",
        nargs="+",
        metavar="FILE",
        help="people's nugget assignments of some answers (nuggetizer's assignment JSONL, one file per run, the "
        "same nuggets as the LLM's): print each score's PPI mean and 95%% interval next to the LLM's mean",
    )
    n.add_argument("--quiet", action="store_true", help="no progress bars")
    add_llm_arguments(n)
