"""MTRAGEval's format-check modes, one per SemEval-2026 Task 8 subtask (importable without the format code)."""

MODES = ("retrieval_taska", "generation_taskb", "rag_taskc")
