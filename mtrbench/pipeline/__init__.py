"""Pipelines that assemble the stages: evaluate (retrieval), sweeps, rag end to end."""
