"""``--rerank NAME`` to a reranking stage, by what the name is:

* ``listwise:MODEL``: an LLM reranking windows of the first stage's list through the LLM backend
  (retrieve/rerank_listwise.py);
* a multi-vector model (ColBERT-style): MaxSim over the model's token vectors (retrieve/late_interaction.py);
* a checkpoint (an alias, a Hub id or a local folder), by its architecture: a causal LM is a yes/no reranker
  (Qwen3-Reranker's recipe), a T5 is monoT5, anything else a sentence-transformers ``CrossEncoder``.
"""

from __future__ import annotations

import json
from pathlib import Path

from mtrbench.infra.errors import MtrbenchError, UserInputError, first_line
from mtrbench.models.kinds import checkpoint_kind
from mtrbench.models.spec import CROSS_ENCODER, MULTI_VECTOR, ModelSpec
from mtrbench.retrieve.base import Retriever
from mtrbench.retrieve.options import LoadingOptions, PipelineOptions
from mtrbench.retrieve.registry import alias

LISTWISE_PREFIX = "listwise:"
YES_NO, MONOT5, CROSS = "yes-no", "monot5", "cross-encoder"
_T5_ARCHITECTURES = ("T5ForConditionalGeneration", "MT5ForConditionalGeneration")


def check_first_stage(spec: ModelSpec | None) -> None:
    """A reranker scores (query, document) pairs: it cannot retrieve from a whole corpus."""
    if spec is not None and spec.kind == CROSS_ENCODER:
        raise UserInputError(
            f"--model {spec.alias}: a reranker ({spec.kind}) scores a first stage's documents and cannot retrieve "
            f"on its own; use it as --rerank {spec.alias} over a first stage (e.g. --model bm25)"
        )


def build_reranker(first: Retriever, stages: PipelineOptions, loading: LoadingOptions) -> Retriever:
    name = stages.rerank
    assert name, "build_reranker is called for --rerank only"
    if name.startswith(LISTWISE_PREFIX):
        from mtrbench.retrieve.rerank_listwise import ListwiseReranker  # deferred: loads the LLM client

        return ListwiseReranker(first, name[len(LISTWISE_PREFIX) :], stages, loading.show_progress)
    spec = alias(name)
    kind = spec.kind if spec is not None else _folder_kind(name)
    if kind == MULTI_VECTOR:
        from mtrbench.retrieve.late_interaction import MaxSimReranker  # deferred: loads torch

        return MaxSimReranker(first, spec or name, stages.rerank_k, loading)
    if kind not in (None, CROSS_ENCODER):
        raise UserInputError(
            f"--rerank {name}: '{name}' is a {kind} model, not a reranker (a cross-encoder, monoT5, a yes/no "
            "LLM reranker, a multi-vector model, or listwise:MODEL)"
        )
    model_id = spec.model_id if spec is not None else name
    from mtrbench.retrieve.rerank import CrossEncoderScorer, PairScorer, PointwiseReranker  # deferred: loads torch

    recipe = reranker_recipe(model_id)
    scorer: PairScorer
    if recipe == CROSS:
        scorer = CrossEncoderScorer(model_id, loading.device)
    else:
        from mtrbench.retrieve import rerank_llm  # deferred: loads torch and transformers

        scorer_class = rerank_llm.YesNoScorer if recipe == YES_NO else rerank_llm.MonoT5Scorer
        scorer = scorer_class(model_id, loading.device, loading.dtype, loading.max_length)
    return PointwiseReranker(first, scorer, stages.rerank_k, stages.rerank_batch_size, loading.show_progress)


def _folder_kind(name: str) -> str | None:
    """A local folder's kind as its sentence-transformers / ColBERT files say (models/kinds.py); None for a Hub id
    or a folder that cannot tell (a bare transformers checkpoint: its recipe is read from its architecture)."""
    if not Path(name).expanduser().is_dir():
        return None
    return checkpoint_kind(name, local_only=True)


def reranker_recipe(model_id: str) -> str:
    """yes-no, monot5 or cross-encoder, from the checkpoint's ``config.json`` architectures. A folder saved by
    sentence-transformers as a CrossEncoder (``modules.json``) is read by ``CrossEncoder`` whatever it holds."""
    folder = Path(model_id).expanduser()
    if folder.is_dir():
        if (folder / "modules.json").is_file():
            return CROSS
        config_path = folder / "config.json"
        if not config_path.is_file():
            raise MtrbenchError(f"--rerank {model_id}: no config.json in the folder (not a transformers checkpoint)")
        try:
            architectures = json.loads(config_path.read_text(encoding="utf-8")).get("architectures") or []
        except (OSError, ValueError) as exc:
            raise MtrbenchError(f"--rerank {model_id}: {config_path} cannot be read ({first_line(exc)})") from None
    else:
        architectures = _hub_architectures(model_id)
    head = architectures[0] if architectures else ""
    if head.endswith("ForCausalLM"):
        return YES_NO
    if head in _T5_ARCHITECTURES:
        return MONOT5
    return CROSS


def _hub_architectures(model_id: str) -> list[str]:
    from transformers import AutoConfig

    from mtrbench.data.hub import hub_error, hub_reachable  # deferred: only Hub ids need it

    online = hub_reachable()
    try:
        config = AutoConfig.from_pretrained(model_id, local_files_only=not online)
    except (OSError, ValueError) as exc:
        if not online:
            raise hub_error(model_id, None, kind="model", what="the reranker", local_option="`--rerank DIR`") from None
        raise MtrbenchError(f"--rerank {model_id}: cannot read the model's configuration ({first_line(exc)})") from None
    return list(getattr(config, "architectures", None) or [])
