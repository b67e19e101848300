"""Measures as values (in the spirit of ir_measures): one module per family under ``families/``,
one registry, one parser for measure strings such as ``nDCG@10`` or ``R@100(rel=2)``."""

from mtrbench.measures.base import Measure, MeasureFamily, all_families, family
from mtrbench.measures.compute import Evaluation, evaluate
from mtrbench.measures.registry import (
    label,
    measure_for_key,
    parse,
    parse_k_values,
    parse_measures,
)

__all__ = [
    "Evaluation",
    "Measure",
    "MeasureFamily",
    "evaluate",
    "all_families",
    "family",
    "label",
    "measure_for_key",
    "parse",
    "parse_k_values",
    "parse_measures",
]
