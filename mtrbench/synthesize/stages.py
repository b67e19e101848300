"""The synthesis pipeline's stages, in order (the command line offers them without loading the pipeline)."""

STAGES = ("curate", "cluster", "generate", "write")
