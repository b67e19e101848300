"""Choice lists and defaults the flags show whose home is a heavy domain module (one that imports data cards,
registries or scoring code). Repeated here so that building the parser imports none of them;
tests/cli/test_cli_flag_choices.py checks that each equals its source."""

from __future__ import annotations

# mtrbench.results.overwrite (mteb's overwrite strategies)
OVERWRITE_STRATEGIES = ("always", "only-missing", "never")
DEFAULT_OVERWRITE = "only-missing"

# mtrbench.retrieve.fusion.FusionOptions.rrf_k
DEFAULT_RRF_K = 60

# mtrbench.serialize.history.DEFAULT_HISTORY (eval, rag's retrieval)
DEFAULT_HISTORY = "full"

# mtrbench.generation.defaults
GENERATION_HISTORIES = ("full", "last-response", "rewrite", "rewrite:llm", "summary:llm")
GENERATION_TOP_K = 5
GENERATION_HISTORY = "full"

# mtrbench.judge.nuggets.ikat.DEFAULT_VITAL_GRADE and mtrbench.judge.nuggets.sources.FORMATS
DEFAULT_VITAL_GRADE = 3
NUGGET_FORMATS = ("auto", "nuggetizer", "ikat")

# mtrbench.synthesize.quality.QUALITY_CHOICES
QUALITY_CHOICES = ("heuristic", "nvidia", "fineweb-edu", "nvidia+fineweb-edu", "none")

# mtrbench.measures.protocols: the official protocols (--protocol official:NAME), in the registry's order
OFFICIAL_PROTOCOLS = ("mtrag", "bridge", "mtr-suite", "ikat", "ikat-ptkb", "trec-cast")

# mtrbench.models.spec.CHECKPOINT_KINDS (--model-kind: the kind of a checkpoint whose files cannot tell)
MODEL_KINDS = ("dense", "sparse", "multi-vector", "cross-encoder", "dual")
# mtrbench.models.spec.KINDS (`mtrbench models --kind`)
ALL_KINDS = ("dense", "sparse", "multi-vector", "cross-encoder", "dual", "hybrid", "lexical")
