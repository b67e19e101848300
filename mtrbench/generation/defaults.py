"""Generation defaults the command line shows in its help; kept apart from the runner so that building the parser
imports no LLM client."""

# --history (eval's names) -> where the text the generator sees comes from: the task's turns, its gold
# rewrite, or a rewriter model (the name's MODEL_STRATEGIES kind)
HISTORY_SOURCES = {
    "full": "task",
    "last-response": "task",
    "rewrite": "gold",
    "rewrite:llm": "llm",
    "summary:llm": "llm",
}
GENERATION_HISTORIES = tuple(HISTORY_SOURCES)
DEFAULT_TOP_K = 5
DEFAULT_HISTORY = "full"  # the generator sees the whole conversation, as eval serializes it by default
