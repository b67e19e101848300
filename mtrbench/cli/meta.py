"""`mtrbench meta power|stability|size`: is a benchmark any good at telling systems apart?"""

from __future__ import annotations

import argparse
import sys

from mtrbench.infra.atomic import atomic_write_text, ensure_parent
from mtrbench.infra.errors import UserInputError
from mtrbench.infra.numeric import json_text
from mtrbench.results.meta_tables import print_power, print_stability


def _cmd_meta(args: argparse.Namespace) -> int:
    handlers = {"power": _cmd_power, "stability": _cmd_stability, "size": _cmd_size}
    if args.meta_command is None:
        args.meta_parser.print_help()
        return 0
    return handlers[args.meta_command](args)


# -- turning flags into typed options -------------------------------------------------------------------
def _split(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def _input_spec(args: argparse.Namespace, results=None, runs=None, qrels=None, level=None, tasks=None):
    from mtrbench.analyses.meta.inputs import InputSpec  # deferred: loads numpy

    return InputSpec(
        results=tuple(args.results if results is None else results),
        runs=tuple(args.runs if runs is None else runs),
        qrels=args.qrels if qrels is None else qrels,
        relevance_level=args.relevance_level if level is None else level,
        tasks=tuple(_split(args.tasks) if tasks is None else tasks),
    )


def _warn_filled(matrices) -> None:
    for matrix in matrices:
        for system, count in matrix.filled.items():
            print(
                f"warning: {matrix.task} {matrix.measure}: {system} lacks {count} of {len(matrix.queries)} "
                f"queries; scored 0 there, as trec_eval -c does",
                file=sys.stderr,
            )


def _write_json(path: str | None, document: dict) -> None:
    if path:
        atomic_write_text(path, json_text(document, path=path, indent=2) + "\n")


def _check_outputs(args: argparse.Namespace) -> None:
    """A bad --output or --plot fails before any work."""
    from mtrbench.analyses.meta.plots import check_plot_path  # deferred: loads numpy

    if args.output:
        ensure_parent(args.output)
    if args.plot:
        check_plot_path(args.plot)


def _console():
    from rich.console import Console

    return Console(width=80)


# -- meta power -----------------------------------------------------------------------------------------
def _cmd_power(args: argparse.Namespace) -> int:
    from mtrbench.analyses.meta.power import check_alpha, discriminative_power  # deferred: loads numpy
    from mtrbench.analyses.meta.tests import Resampling  # deferred: loads numpy
    from mtrbench.results.systems import load_matrices  # deferred: loads numpy

    _check_outputs(args)
    check_alpha(args.alpha)
    units = _split(args.unit) or ["conversation"]
    plans = [Resampling(test=args.test, unit=unit, samples=args.samples, seed=args.seed) for unit in units]
    matrices = load_matrices(_input_spec(args), _split(args.measures))
    _warn_filled(matrices)
    reports = [discriminative_power(matrix, plan, args.alpha) for matrix in matrices for plan in plans]
    print_power(_console(), reports)
    document = reports[0].as_dict()
    if len(reports) > 1:
        document["reports"] = [r.as_dict() for r in reports]
    _write_json(args.output, document)
    if args.plot:
        from mtrbench.analyses.meta.plots import plot_asl_curves  # deferred: loads numpy

        plot_asl_curves(reports, args.plot)
    return 0


# -- meta stability -------------------------------------------------------------------------------------
def _second_condition(args: argparse.Namespace):
    """The second matrix and how to name both conditions."""
    from mtrbench.results.systems import load_matrices  # deferred: loads numpy

    given = [
        name
        for name in ("vs_qrels", "vs_relevance_level", "vs_measure", "vs_results", "vs_runs")
        if getattr(args, name) is not None
    ]
    if args.vs_runs is not None and given == ["vs_qrels", "vs_runs"]:
        given = ["vs_runs"]
    if len(given) != 1:
        raise UserInputError(
            "give exactly one second condition: --vs-qrels, --vs-relevance-level, --vs-measure, "
            "--vs-results or --vs-runs (with --vs-qrels)"
        )
    measures = _split(args.measures)
    if len(measures) > 1:
        raise UserInputError(
            "stability compares one measure under two conditions: give one --measures "
            "(or --vs-measure for two measures)"
        )
    first = load_matrices(_input_spec(args), measures)
    if len(first) != 1:
        raise UserInputError(
            f"the inputs hold {len(first)} tasks; choose one with --tasks (or compare tasks with --vs-results)"
        )
    measure = [first[0].measure]
    kind = given[0]
    if kind in ("vs_qrels", "vs_relevance_level"):
        if not args.runs:
            raise UserInputError(f"--{kind.replace('_', '-')} rescores runs: give --runs and --qrels")
        second = load_matrices(_input_spec(args, qrels=args.vs_qrels, level=args.vs_relevance_level), measure)
        labels = (
            (args.qrels, args.vs_qrels)
            if kind == "vs_qrels"
            else (f"level {args.relevance_level}", f"level {args.vs_relevance_level}")
        )
    elif kind == "vs_measure":
        second = load_matrices(_input_spec(args), [args.vs_measure])
        from mtrbench.measures import label  # deferred: loads pytrec_eval

        labels = (label(first[0].measure), label(second[0].measure))
    elif kind == "vs_results":
        # --tasks picks condition A's task; the other results may be another task (two tasks compared)
        second = load_matrices(_input_spec(args, results=args.vs_results, runs=(), qrels="", tasks=()), measure)
        labels = ("results", "vs-results")
    else:
        if not args.runs:
            raise UserInputError("--vs-runs pairs with --runs")
        second = load_matrices(_input_spec(args, runs=args.vs_runs, qrels=args.vs_qrels or args.qrels), measure)
        labels = ("runs", "vs-runs")
    if len(second) != 1:
        raise UserInputError(f"the second condition holds {len(second)} tasks; give one")
    return first[0], second[0], labels


def _cmd_stability(args: argparse.Namespace) -> int:
    from mtrbench.analyses.meta.stability import rank_agreement, swap_method  # deferred: loads numpy
    from mtrbench.analyses.meta.tests import Resampling  # deferred: loads numpy

    _check_outputs(args)
    plan = Resampling(test="t", unit=args.unit, samples=args.samples, seed=args.seed)
    first, second, (first_label, second_label) = _second_condition(args)
    _warn_filled([first, second])
    agreement = rank_agreement(first, second, str(first_label), str(second_label))
    swaps = swap_method(first, plan, subset_size=args.subset_size, bin_width=args.bin_width)
    print_stability(_console(), agreement, swaps)
    document = {
        **agreement.as_dict(),
        "swap": swaps.as_dict(),
        "seed": plan.seed,
        "samples": plan.samples,
        "unit": plan.unit,
        "test": "swap method",
    }
    _write_json(args.output, document)
    if args.plot:
        from mtrbench.analyses.meta.plots import plot_stability  # deferred: loads numpy

        plot_stability(agreement, swaps, args.plot)
    return 0


# -- meta size ------------------------------------------------------------------------------------------
def _cmd_size(args: argparse.Namespace) -> int:
    from mtrbench.analyses.meta.size import topic_set_size  # deferred: loads numpy
    from mtrbench.results.systems import load_matrices  # deferred: loads numpy
    from mtrbench.results.table import compact_table, print_titled  # deferred: loads pytrec_eval

    _check_outputs(args)
    if args.unit not in ("conversation", "query"):
        raise UserInputError(f"--unit must be conversation or query, got '{args.unit}'")
    matrices = load_matrices(_input_spec(args), _split(args.measures))
    _warn_filled(matrices)
    reports = [topic_set_size(m, args.unit, args.delta, args.alpha, args.power) for m in matrices]
    from mtrbench.measures import label  # deferred: loads pytrec_eval

    console = _console()
    several = len({r.task for r in reports}) > 1
    table = compact_table()
    for column in (["task"] if several else []) + [
        "measure",
        "V_E",
        "now",
        "t: n0",
        "t: n",
        "power now",
        "ANOVA: n",
        "power now",
    ]:
        table.add_column(column, justify="left" if column in ("task", "measure") else "right", no_wrap=True)
    for r in reports:
        table.add_row(
            *([r.task[:20]] if several else []),
            label(r.measure),
            f"{r.residual_variance:.4f}",
            str(r.current_size),
            str(r.paired_t.closed_form),
            str(r.paired_t.required),
            f"{r.paired_t.power_now:.2f}",
            str(r.anova.required),
            f"{r.anova.power_now:.2f}",
        )
    where = "" if several else f"{reports[0].task}: "
    print_titled(
        console,
        f"{where}{args.unit}s needed to detect a difference of {args.delta:g} with power "
        f"{args.power:g} at alpha {args.alpha:g} (n0: Sakai's closed form; ANOVA over "
        f"{reports[0].systems} systems, delta as the range)",
        table,
    )
    document = reports[0].as_dict()
    if len(reports) > 1:
        document["reports"] = [r.as_dict() for r in reports]
    _write_json(args.output, document)
    if args.plot:
        from mtrbench.analyses.meta.plots import plot_size  # deferred: loads numpy

        plot_size(reports[0], args.plot)
    return 0
