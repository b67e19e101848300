"""MTR-EVAL: LLM audit of a benchmark's gold labels (alignment, completeness, faithfulness, quality)."""
