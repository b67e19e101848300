"""Embedding engine and on-disk embedding cache."""
