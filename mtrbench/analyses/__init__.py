"""Analyses beyond the plain measures: breakdowns, holes, pools, RAGAlign, significance."""
