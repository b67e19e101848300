"""The official metric names and default model, importable without the metrics' dependencies."""

ALGORITHMIC_METRICS = (
    "Recall",
    "RougeL_stemFalse",
    "BertscoreP",
    "BertscoreR",
    "BertKPrec",
    "Extractiveness_RougeL",
    "Length",
)
BERTSCORE_METRICS = ("BertscoreP", "BertscoreR", "BertKPrec")
LLM_METRICS = ("RB_llm", "RL_F", "idk_eval", "underspecified_eval")
ALL_METRICS = ALGORITHMIC_METRICS + LLM_METRICS
OFFICIAL_MODEL = "microsoft/deberta-xlarge-mnli"
