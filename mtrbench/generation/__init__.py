"""Conversational RAG generation: model-written history (rewrites, summaries) and answers with citations."""
