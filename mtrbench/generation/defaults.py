"""Generation defaults the command line shows in its help; kept apart from the runner so that building the parser
imports no LLM client."""

from mtrbench.generation.prompts import HISTORY_RULES

# eval's --history strategies (serialize.history) that generation has an answer prompt for; what each needs (gold
# rewrites, a rewriter model) the strategy itself says
GENERATION_HISTORIES = tuple(HISTORY_RULES)
DEFAULT_TOP_K = 5
DEFAULT_HISTORY = "full"  # the generator sees the whole conversation, as eval serializes it by default
