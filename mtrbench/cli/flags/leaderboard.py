"""`mtrbench leaderboard`'s flags; the handlers are in mtrbench/cli/leaderboard.py, imported only when the command runs."""

from __future__ import annotations

from mtrbench.cli.common import Subparsers
from mtrbench.cli.flag_types import non_negative_float, positive_int


def _add_verify_parser(actions: Subparsers) -> None:
    v = actions.add_parser(
        "verify",
        help="re-derive entries: compare existing results or re-run their commands",
        description="Compare each entry with an existing result, else re-run its recorded "
        "`mtrbench eval` command. Only registered model aliases or Hugging Face ids, "
        "registered task names and checked settings are re-run: an entry whose "
        "command names a local path, --trust-remote-code or any option that chooses "
        "where files are read or written is REFUSED (exit status 1).",
    )
    v.add_argument("leaderboard", metavar="NAME|FILE")
    v.add_argument(
        "--tolerance", type=non_negative_float, default=1e-4, help="largest accepted absolute difference [1e-4]"
    )
    v.add_argument(
        "--only", action="append", metavar="ID", help="verify only this entry id (repeatable, or a comma list)"
    )
    v.add_argument("--results-dir", help="folder of existing results to compare with before re-running anything")
    v.add_argument("--rerun", action="store_true", help="re-run every command even when its result exists")
    v.add_argument("--work-dir", help="keep re-run results here [a temporary folder, removed afterwards]")
    v.add_argument("--cache-dir", help="corpus embedding cache for re-runs [`mtrbench eval`'s default]")
    v.add_argument("--data-dir", help="local copy of the task's data for re-runs (with --only, for one task)")
    v.add_argument("--corpus", help="external corpus for re-runs of tasks that do not ship one")


def register(sub: Subparsers) -> dict[str, str]:
    p = sub.add_parser(
        "leaderboard",
        help="build, verify, show or publish leaderboard JSON",
        description="Leaderboards aggregate result files into comparable groups with per-task ranks "
        "and cross-task averages. NAME is leaderboards/NAME.json (here or shipped) or a "
        "path.",
    )
    actions = p.add_subparsers(dest="leaderboard_action", required=True, metavar="build|verify|show|html")

    b = actions.add_parser("build", help="aggregate result files (and leaderboards) into a leaderboard JSON")
    b.add_argument(
        "inputs",
        nargs="+",
        metavar="RESULTS",
        help="result JSON files or folders (searched recursively); leaderboard JSON files to merge",
    )
    b.add_argument("-o", "--output", required=True, help="leaderboard file to write, e.g. leaderboards/NAME.json")
    b.add_argument("--name", help="leaderboard name [the output file's stem]")
    b.add_argument("--description", default="", help="one line shown above the tables")
    b.add_argument(
        "--keep-newest",
        action="store_true",
        help="for duplicate entries (same model, task and settings) keep the newest instead of failing",
    )
    b.add_argument(
        "--verbose",
        action="store_true",
        help="print every note on why entries are kept apart [a count and the first few]",
    )

    _add_verify_parser(actions)

    _add_show_and_html(actions)
    _add_plot(sub)
    return {"leaderboard": "mtrbench.cli.leaderboard:_cmd_leaderboard", "plot": "mtrbench.cli.leaderboard:_cmd_plot"}


def _add_show_and_html(actions: Subparsers) -> None:
    s = actions.add_parser("show", help="print the leaderboard as terminal tables, one per comparable group")
    s.add_argument("leaderboard", metavar="NAME|FILE")
    s.add_argument("--task", help="only this task, with its headline metrics")
    s.add_argument("--metric", help="metric key to show, e.g. recall_at_20 [each task's main score]")
    s.add_argument(
        "--results",
        action="append",
        metavar="DIR",
        help="result folder (repeatable) holding the entries' `mtrbench eval` results: ranks become tie-aware "
        "(neighbours not significantly different share a rank group such as 1-3; paired t-test on conversation "
        "means, Holm over the adjacent pairs, alpha 0.05) where every system of a table has its per-query file",
    )

    h = actions.add_parser("html", help="write a static page: a section per comparable group, tables, charts")
    h.add_argument("leaderboard", metavar="NAME|FILE")
    h.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="folder for index.html; a single-task table's rows link to DIR/explore/TASK/index.html when "
        "`mtrbench explore ... -o DIR/explore/TASK` built one there",
    )
    h.add_argument(
        "--results",
        action="append",
        metavar="DIR",
        help="result folder (repeatable) holding the entries' `mtrbench eval` results: adds per-turn "
        "curves with bootstrap bands over conversations, and tie-aware ranks (as `leaderboard show --results`)",
    )


def _add_plot(sub: Subparsers) -> None:
    plot = sub.add_parser("plot", help="PNG figures: per-turn Recall@k/nDCG@k by history strategy; leaderboard bars")
    plot.add_argument("results", nargs="*", metavar="RESULTS", help="result JSON files or folders")
    plot.add_argument("-o", "--output", required=True, metavar="DIR")
    plot.add_argument("--k", type=positive_int, default=10, help="cutoff of the per-turn curves [10]")
    plot.add_argument(
        "--leaderboard",
        metavar="NAME|FILE",
        help="also draw this leaderboard's bars, a figure per table of its page; runs whose result "
        "files are among RESULTS get 95%% bootstrap intervals (conversations resampled)",
    )
    plot.add_argument("--metric", help="only the leaderboard figures whose bars show this metric [all]")
