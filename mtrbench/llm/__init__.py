"""LLM backend: OpenAI-compatible chat completions with a response cache."""
