"""Audit defaults the command line shows in its help, without loading the audit (rich, judges)."""

DEFAULT_NEGATIVES = 4
DEFAULT_MAX_DOC_CHARS = 8000  # ~2k tokens per document keeps a 5-document prompt inside small judges' context

ALIGNMENT, COMPLETENESS, FAITHFULNESS, QUALITY = "alignment", "completeness", "faithfulness", "quality"
DIMENSIONS = (ALIGNMENT, COMPLETENESS, FAITHFULNESS, QUALITY)
