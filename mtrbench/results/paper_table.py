"""A ``ComparisonTable`` written out: terminal, Markdown, LaTeX (booktabs), CSV or JSON.

Every format shows the same thing: per system its letter, name and mean per measure; the best mean of a measure
in bold; after each mean the letters of the systems it is significantly better than.
"""

from __future__ import annotations

import csv
import io

from mtrbench.analyses.compare_many import ComparisonTable
from mtrbench.infra.numeric import json_text

FORMATS = ("table", "markdown", "latex", "csv", "json")
_SUFFIXES = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".tex": "latex",
    ".csv": "csv",
    ".json": "json",
    ".txt": "table",
}
_TEST_NAMES = {"t": "paired t-test", "randomization": "paired randomization test"}
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def format_for(path: str | None, chosen: str | None) -> str:
    """--format, else what the output file's suffix says, else the terminal table."""
    if chosen:
        return chosen
    if path:
        from pathlib import Path

        return _SUFFIXES.get(Path(path).suffix.lower(), "table")
    return "table"


def legend(table: ComparisonTable) -> str:
    o = table.options
    pairs = (
        f"each system tested against the baseline ({table.letters[o.baseline]})"
        if o.baseline is not None
        else "every pair tested"
    )
    units = f"{table.n_units} queries" if o.unit == "query" else f"{table.n_units} conversations (means of their turns)"
    left = f"; {table.left_out} queries not scored by every system left out" if table.left_out else ""
    return (
        f"Means over {table.n_queries} queries, the best in bold. Letters after a mean: the systems it is "
        f"significantly better than ({_TEST_NAMES[o.test]} over {units}, {pairs}, Holm-adjusted within each "
        f"measure, p < {o.alpha:g}){left}."
    )


def render(table: ComparisonTable, fmt: str, labels: dict[str, str]) -> str:
    if fmt == "markdown":
        return to_markdown(table, labels)
    if fmt == "latex":
        return to_latex(table, labels)
    if fmt == "csv":
        return to_csv(table, labels)
    if fmt == "json":
        return to_json(table, labels)
    raise ValueError(f"no text rendering for format {fmt}")


def _marks(table: ComparisonTable, system: int, measure: str) -> str:
    return "".join(table.letters[j] for j in table.beats(system, measure))


def to_markdown(table: ComparisonTable, labels: dict[str, str]) -> str:
    head = ["", "System", *(labels[m] for m in table.measures)]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join([":-", ":-", *("-:" for _ in table.measures)]) + "|"]
    for i, name in enumerate(table.systems):
        cells = []
        for m in table.measures:
            value = f"{table.means[(i, m)]:.4f}"
            marks = _marks(table, i, m)
            cells.append((f"**{value}**" if i in table.best(m) else value) + (f"<sup>{marks}</sup>" if marks else ""))
        lines.append("| " + " | ".join([f"({table.letters[i]})", name.replace("|", "\\|"), *cells]) + " |")
    return "\n".join(lines) + "\n\n" + legend(table) + "\n"


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


def to_latex(table: ComparisonTable, labels: dict[str, str]) -> str:
    lines = [
        "% needs \\usepackage{booktabs}",
        "\\begin{table}[t]",
        "\\centering",
        "\\begin{tabular}{ll" + "r" * len(table.measures) + "}",
        "\\toprule",
        " & System & " + " & ".join(latex_escape(labels[m]) for m in table.measures) + " \\\\",
        "\\midrule",
    ]
    for i, name in enumerate(table.systems):
        cells = []
        for m in table.measures:
            value = f"{table.means[(i, m)]:.4f}"
            marks = _marks(table, i, m)
            cells.append(
                (f"\\textbf{{{value}}}" if i in table.best(m) else value)
                + (f"$^{{\\mathrm{{{marks}}}}}$" if marks else "")
            )
        lines.append(f"({table.letters[i]}) & {latex_escape(name)} & " + " & ".join(cells) + " \\\\")
    caption = latex_escape(legend(table)).replace("p < ", "$p<$ ")  # a bare < prints as an inverted ! in OT1
    lines += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{caption}}}", "\\end{table}"]
    return "\n".join(lines) + "\n"


def to_csv(table: ComparisonTable, labels: dict[str, str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        ["letter", "system", *(col for m in table.measures for col in (labels[m], f"{labels[m]} better than"))]
    )
    for i, name in enumerate(table.systems):
        writer.writerow(
            [
                table.letters[i],
                name,
                *(col for m in table.measures for col in (f"{table.means[(i, m)]:.6f}", _marks(table, i, m))),
            ]
        )
    return out.getvalue()


def to_json(table: ComparisonTable, labels: dict[str, str]) -> str:
    o = table.options
    return (
        json_text(
            {
                "systems": [
                    {
                        "letter": table.letters[i],
                        "name": name,
                        "means": {m: table.means[(i, m)] for m in table.measures},
                        "better_than": {m: [table.letters[j] for j in table.beats(i, m)] for m in table.measures},
                    }
                    for i, name in enumerate(table.systems)
                ],
                "measures": {m: labels[m] for m in table.measures},
                "test": o.test,
                "unit": o.unit,
                "alpha": o.alpha,
                "multiple_comparisons": "holm within each measure",
                "baseline": None if o.baseline is None else table.letters[o.baseline],
                "queries": table.n_queries,
                "units": table.n_units,
                "left_out_queries": table.left_out,
                "tests": [
                    {
                        "measure": t.measure,
                        "a": table.letters[t.a],
                        "b": table.letters[t.b],
                        "mean_b_minus_a": t.diff,
                        "p_value": t.p_value,
                        "p_holm": t.p_holm,
                    }
                    for t in table.tests
                ],
            },
            path="the comparison table",
            indent=2,
        )
        + "\n"
    )


def print_table(table: ComparisonTable, labels: dict[str, str], console) -> None:
    from mtrbench.results.table import compact_table, print_titled  # deferred: loads pytrec_eval

    rich_table = compact_table()
    rich_table.add_column("", no_wrap=True)
    rich_table.add_column("system")
    for m in table.measures:
        rich_table.add_column(labels[m], justify="right", no_wrap=True)
    for i, name in enumerate(table.systems):
        cells = []
        for m in table.measures:
            marks = _marks(table, i, m)
            value = f"{table.means[(i, m)]:.4f}"
            cells.append((f"[bold]{value}[/bold]" if i in table.best(m) else value) + (f" {marks}" if marks else ""))
        rich_table.add_row(f"({table.letters[i]})", name, *cells)
    print_titled(console, legend(table), rich_table)
