"""Judging defaults the command line shows in its help; kept apart from the judge so that building the parser
imports neither pytrec_eval nor numpy."""

DEFAULT_MAX_PASSAGE_CHARS = 4000
DEFAULT_MEASURES = ("BLEU-1", "ROUGE-L", "CitRecall", "CitPrec", "TokenF1", "EM")
DEFAULT_RAGALIGN = ("RAGAlign@10", "RAGAlign@10(of=nDCG)")  # binary on Hit@10, point-biserial on nDCG@10
