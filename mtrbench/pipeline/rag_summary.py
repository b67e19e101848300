"""What `mtrbench rag` shows once a run is over: the per-turn table and one line per stage (retrieval,
generation, reference measures, judge, nuggets, RAGAlign), from the run's :class:`~mtrbench.pipeline.rag.RagReport`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from mtrbench.pipeline.rag import RagReport


def print_rag_report(console: Console, report: RagReport, quiet: bool) -> None:
    """Per-turn table (unless ``quiet``), then retrieval, generation, reference scores, judge, nuggets and
    RAGAlign lines, and where the files went."""
    from mtrbench.results.table import compact_table, print_titled  # deferred: loads pytrec_eval

    retrieval, generated = report.retrieval, report.generation
    main = retrieval.main_score_key
    per_query = retrieval.per_query_values()
    scores, outcome = report.scores, report.outcome
    labels = scores.evaluation.labels() if scores is not None else {}
    keys = list(scores.evaluation.metric_keys) if scores is not None else []
    judged = {t.item.qid: t for t in outcome.run.turns} if outcome is not None else {}
    if not quiet:
        table = compact_table()
        for column in ["qid", main, *(labels[k] for k in keys), *(["judge"] if outcome is not None else [])]:
            table.add_column(column, justify="left" if column == "qid" else "right", no_wrap=column == "qid")
        qids = list(dict.fromkeys([*(scores.scored if scores is not None else []), *judged]))
        for qid in qids:
            row = [qid, f"{per_query[qid][main]:.4f}" if qid in per_query else "-"]
            if scores is not None:
                values = scores.evaluation.per_query.get(qid, {})
                row += [f"{values[k]:.4f}" if k in values else "-" for k in keys]
            if outcome is not None:
                turn = judged.get(qid)
                row.append(
                    "-"
                    if turn is None
                    else "failed"
                    if not turn.ok
                    else f"{turn.value:g}"
                    if outcome.run.mode == "rating"
                    else "correct"
                    if turn.value
                    else "incorrect"
                )
            table.add_row(*row)
        assert report.task is not None  # run_rag's report of a finished run carries its task
        print_titled(console, f"{report.task.name} · per turn", table)
    console.print(
        f"retrieval {report.retrieval.history}: {main} {retrieval.scores.get(main, float('nan')):.4f} "
        f"over {retrieval.n_evaluated} turns",
        soft_wrap=True,
    )
    console.print(
        f"generation: {generated.generated} generated this run, {generated.done_before} already there, "
        f"{generated.failed} failed of {generated.turns}; {generated.requests} request(s) sent",
        soft_wrap=True,
    )
    if scores is not None:
        means = "  ".join(f"{labels[k]} {v:.4f}" for k, v in scores.means().items())
        console.print(f"{len(scores.scored)} turns scored: {means}", soft_wrap=True)
    if outcome is not None:
        s = outcome.summary
        line = f"judge {s['judge']['model']} ({s['mode']}): {s['counts']['answered']} answered"
        if s.get("accuracy") is not None:
            line += f", correct {s['accuracy']:.3f}"
        if s.get("mean_rating") is not None:
            line += f", mean rating {s['mean_rating']:.3f}"
        if outcome.failures:
            line += f"; {len(outcome.failures)} failed after retries (not scored; asked again next run)"
        console.print(line, soft_wrap=True)
    _print_nuggets_and_alignment(console, report)
    if generated.mtrag_output is not None:
        console.print(
            f"MTRAGEval predictions (rag_taskc): {generated.mtrag_output} ({generated.mtrag_predictions} tasks)",
            soft_wrap=True,
        )
    if generated.failed:
        console.print(
            f"[yellow]warning:[/yellow] {generated.failed} turn(s) not generated: {generated.failures_path}",
            soft_wrap=True,
        )
    console.print(f"[dim]results: {report.output}[/dim]", soft_wrap=True)


def _print_nuggets_and_alignment(console: Console, report: RagReport) -> None:
    if report.nuggets is not None:
        means = report.nuggets.scores[0].scores
        shown = "  ".join(f"{name} {means[name]:.4f}" for name in ("strict_vital", "vital", "strict_all", "all"))
        console.print(f"nuggets over {means['n']} answers: {shown}", soft_wrap=True)
    for key, result in (report.alignment or {}).items():
        if result["value"] is None:
            console.print(f"[yellow]warning:[/yellow] {key}: {result['note']}", soft_wrap=True)
        else:
            p = f", p={result['p_value']:.3g}" if result.get("p_value") is not None else ""
            console.print(
                f"{key} (of {result['metric']}): {result['value']:.4f} on {result['n']} turns{p}", soft_wrap=True
            )


__all__ = ["print_rag_report"]
