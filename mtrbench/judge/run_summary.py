"""What `mtrbench judge run` prints under its per-turn table: one line per reference-measure set, judge and
RAGAlign measure, with the notes and warnings that qualify them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from mtrbench.judge.api import JudgeOutcome
    from mtrbench.judge.scoring import GenerationScores


def print_run_summary(
    console: Console,
    scores: GenerationScores | None,
    outcome: JudgeOutcome | None,
    alignment: dict[str, dict[str, Any]] | None,
) -> None:
    """The reference measures' means, the judge's line (and its failed turns and notes), then each RAGAlign
    measure's value or why it has none."""
    if scores is not None:
        means = "  ".join(f"{scores.evaluation.labels()[k]} {v:.4f}" for k, v in scores.means().items())
        console.print(f"{len(scores.scored)} turns scored: {means}", soft_wrap=True)
        for note, count in scores.notes.items():
            console.print(f"[yellow]note:[/yellow] {count} {note}", soft_wrap=True)
    if outcome is not None:
        s = outcome.summary
        line = f"judge {s['judge']['name']} ({s['mode']}): {s['counts']['answered']} answered"
        if s["mode"] == "rating" and s.get("mean_rating") is not None:
            line += f", mean rating {s['mean_rating']:.3f}"
        if s["mode"] == "verdict" and s.get("accuracy") is not None:
            line += f", correct {s['accuracy']:.3f}"
        console.print(line, soft_wrap=True)
        if outcome.failures:
            console.print(
                f"[yellow]warning:[/yellow] {len(outcome.failures)} turn(s) failed after retries and "
                f"are not scored: "
                + ", ".join(f["key"] for f in outcome.failures[:10])
                + (" ..." if len(outcome.failures) > 10 else ""),
                soft_wrap=True,
            )
        for note, count in outcome.notes.items():
            console.print(f"[yellow]note:[/yellow] {count} {note}", soft_wrap=True)
    for key, result in (alignment or {}).items():
        if result["value"] is None:
            console.print(f"[yellow]warning:[/yellow] {key}: {result['note']}", soft_wrap=True)
            continue
        p = f", p={result['p_value']:.3g}" if result.get("p_value") is not None else ""
        console.print(f"{key} (of {result['metric']}): {result['value']:.4f} on {result['n']} turns{p}", soft_wrap=True)


__all__ = ["print_run_summary"]
