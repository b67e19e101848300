"""The GGUF conversion's shortcut (``llm.packaged._gguf_parsed_once``): one parse of a file and one tensor-name
table while transformers reads a GGUF three times, and gguf's own names back afterwards.

On a tiny GGUF file written here with gguf's writer (the real SmolLM2 file takes seconds to parse). That the
shortcut changes nothing in the converted model was checked on SmolLM2 itself: every tensor and the tokenizer
equal an unpatched transformers load (conversion 17.6 s against 35 s+ on one core); that check is too slow to run
in every test run.
"""

from __future__ import annotations

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="the [real-llm] extra (gguf) is not installed")


def write_tiny_gguf(path) -> None:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_uint32("llama.block_count", 2)
    writer.add_tensor("token_embd.weight", np.arange(12, dtype=np.float32).reshape(3, 4))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_readers_and_name_tables_are_shared_inside_and_gguf_is_itself_after(tmp_path):
    from mtrbench.llm.packaged import _gguf_parsed_once

    path = tmp_path / "tiny.gguf"
    write_tiny_gguf(path)
    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with _gguf_parsed_once():
        from gguf import GGUFReader, get_tensor_name_map  # as transformers imports them, at call time

        first, second = GGUFReader(path), GGUFReader(str(path))
        assert first is second  # one parse for tokenizer, config and weights
        assert np.array_equal(first.get_tensor(0).data, np.arange(12, dtype=np.float32).reshape(3, 4))
        arch = next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == "llama")
        assert get_tensor_name_map(arch, 2) is get_tensor_name_map(arch, 2)  # built once, not per tensor
    assert gguf.GGUFReader is reader_class and gguf.get_tensor_name_map is name_map
    assert gguf.GGUFReader(path) is not gguf.GGUFReader(path)  # outside: gguf's own, a new reader each call


def test_names_are_restored_when_the_conversion_fails(tmp_path):
    from mtrbench.llm.packaged import _gguf_parsed_once

    reader_class = gguf.GGUFReader
    with pytest.raises(ValueError), _gguf_parsed_once():
        raise ValueError("transformers cannot load this file")
    assert gguf.GGUFReader is reader_class


def test_a_gguf_transformers_cannot_load_is_one_error_line_and_leaves_no_folder(
    native_mini, tmp_path, monkeypatch, capsys
):
    """A GGUF file without a tokenizer (as written above): generate --base-url hf://FILE.gguf exits 2 with one
    `error:` line naming the file, and the model cache holds no (partial) converted folder afterwards."""
    from mtrbench.cli import main

    cache = tmp_path / "cache"
    monkeypatch.setenv("MTRBENCH_CACHE_DIR", str(cache))
    path = tmp_path / "tiny.gguf"
    write_tiny_gguf(path)
    code = main(
        [
            "generate",
            "--task",
            str(native_mini),
            "--oracle",
            "--model",
            "tiny",
            "--base-url",
            f"hf://{path}",
            "--output",
            str(tmp_path / "answers.jsonl"),
            "--yes",
            "--quiet",
            "--no-llm-cache",
        ]
    )
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1, err
    assert f"{path}: transformers cannot load this GGUF file" in errors[0] and "Traceback" not in err
    assert not [p for p in (cache / "models").glob("*") if not p.name.endswith(".lock")]
    assert not (tmp_path / "answers.jsonl").exists() or not (tmp_path / "answers.jsonl").read_text().strip()


def test_a_quantization_gguf_cannot_dequantize_is_a_model_error(tmp_path, monkeypatch):
    """transformers dequantizes through gguf's ``quants.dequantize``, which raises NotImplementedError for a
    type it has no code for (Q8_1 here, raised by gguf itself): that is an unusable file, one ModelError."""
    import transformers

    from mtrbench.infra.errors import ModelError
    from mtrbench.llm.packaged import converted_folder

    def load_with_q8_1(*args, **kwargs):
        return gguf.quants.dequantize(np.zeros(36, dtype=np.uint8), gguf.GGMLQuantizationType.Q8_1)

    monkeypatch.setenv("MTRBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: object())
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", load_with_q8_1)
    path = tmp_path / "q8_1.gguf"
    write_tiny_gguf(path)
    with pytest.raises(ModelError, match=r"q8_1\.gguf: transformers cannot load this GGUF file \(.*Q8_1"):
        converted_folder(path)
    assert not list((tmp_path / "cache").rglob("config.json"))  # nothing half-converted left as a model
