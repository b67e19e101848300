"""Metrics: pytrec_eval-backed ranking metrics, TREC file IO, breakdowns."""

from mtrbench.metrics.trec_metrics import Evaluation, evaluate, metric_key, parse_families, parse_k_values, pretty_name

__all__ = ["Evaluation", "evaluate", "metric_key", "parse_families", "parse_k_values", "pretty_name"]
