"""LLM-backed audits: MTR-EVAL (benchmark audit) and DREAM (debate relevance assessment)."""
