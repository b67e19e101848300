"""Instruction-tuned decoder LLM embedders (Qwen3-Embedding, e5-mistral, gte-Qwen2, NV-Embed).

Each pools the last token of a left- or right-padded causal decoder and reads queries with an instruction
template whose ``{task}`` is filled with the task description (serialize/instructions.py; docs/llm-embedders.md).
Metadata from the model cards on the Hugging Face Hub and mteb's ModelMeta entries; revisions are not pinned
(results record the commit they resolved to).
"""

from __future__ import annotations

from mtrbench.models.spec import DENSE, ModelSpec

# Qwen3-Embedding's own format has no space after "Query:"; e5-mistral, gte-Qwen2 and NV-Embed put one.
QWEN3_TEMPLATE = "Instruct: {task}\nQuery:"
E5_TEMPLATE = "Instruct: {task}\nQuery: "

_QWEN3_NOTE = "Qwen3-Embedding {size} (last-token pooling, left padding; its tokenizer appends <|endoftext|>)"
# Under transformers 5 these tokenizers' tokenizer.json no longer adds the end-of-sequence token the last-token
# pooling was trained on: mtrbench appends it (append_eos), as mteb does.
_EOS_NOTE = "the </s> or <|endoftext|> its pooling reads is appended by mtrbench (transformers 5 drops it)"


def _qwen3(size: str, parameters: int, dim: int) -> ModelSpec:
    return ModelSpec(
        f"qwen3-embedding-{size.lower()}",
        DENSE,
        f"Qwen/Qwen3-Embedding-{size}",
        description=_QWEN3_NOTE.format(size=size),
        family="Qwen3-Embedding",
        parameters=parameters,
        embedding_dim=dim,
        max_tokens=32768,
        instruction_template=QWEN3_TEMPLATE,
        license="apache-2.0",
        release_date="2025-06-05",
        reference=f"https://huggingface.co/Qwen/Qwen3-Embedding-{size}",
    )


def _gte_qwen2(size: str, parameters: int, dim: int, released: str) -> ModelSpec:
    return ModelSpec(
        f"gte-qwen2-{size.lower()}",
        DENSE,
        f"Alibaba-NLP/gte-Qwen2-{size}-instruct",
        needs_remote_code=True,
        append_eos=True,
        description=f"gte-Qwen2 {size} instruct (last-token pooling; {_EOS_NOTE}); needs --trust-remote-code",
        family="gte-Qwen2",
        parameters=parameters,
        embedding_dim=dim,
        max_tokens=32768,
        instruction_template=E5_TEMPLATE,
        license="apache-2.0",
        release_date=released,
        reference=f"https://huggingface.co/Alibaba-NLP/gte-Qwen2-{size}-instruct",
    )


SPECS: tuple[ModelSpec, ...] = (
    _qwen3("0.6B", 595_776_512, 1024),
    _qwen3("4B", 4_021_774_336, 2560),
    _qwen3("8B", 7_567_295_488, 4096),
    ModelSpec(
        "e5-mistral-7b",
        DENSE,
        "intfloat/e5-mistral-7b-instruct",
        append_eos=True,
        description=f"E5 Mistral 7B instruct (last-token pooling; {_EOS_NOTE}; trained on up to 4096 tokens)",
        family="E5",
        parameters=7_111_000_000,
        embedding_dim=4096,
        max_tokens=32768,
        instruction_template=E5_TEMPLATE,
        license="mit",
        release_date="",  # the model card states none
        reference="https://huggingface.co/intfloat/e5-mistral-7b-instruct",
    ),
    _gte_qwen2("1.5B", 1_543_268_864, 1536, "2024-07-29"),
    _gte_qwen2("7B", 7_069_121_024, 3584, "2024-06-15"),
    ModelSpec(
        "nv-embed-v2",
        DENSE,
        "nvidia/NV-Embed-v2",
        needs_remote_code=True,
        append_eos=True,
        description="NVIDIA NV-Embed-v2 (Mistral 7B, latent-attention pooling in its own code; "
        "non-commercial licence); needs --trust-remote-code",
        family="NV-Embed",
        parameters=7_850_000_000,
        embedding_dim=4096,
        max_tokens=32768,
        instruction_template=E5_TEMPLATE,
        license="cc-by-nc-4.0",
        release_date="2024-09-09",
        reference="https://huggingface.co/nvidia/NV-Embed-v2",
    ),
)
