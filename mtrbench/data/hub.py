"""Everything that may touch the Hugging Face Hub, with fast, one-line failures when it cannot.

huggingface_hub retries a dead connection for more than a minute before giving up; we probe the
endpoint once (a TCP connect with a short timeout) and, when it is unreachable, use only the local
cache so the user gets an actionable message in seconds.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mtrbench.formats.lines import check_utf8, diagnose_text, is_other_container, read_jsonl
from mtrbench.infra.errors import DataError, HubUnavailableError, UserInputError, first_line

_TRUE = {"1", "true", "yes", "on"}


def offline_mode() -> bool:
    return any(os.environ.get(var, "").lower() in _TRUE for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


@functools.lru_cache(maxsize=1)
def hub_reachable(timeout: float = 3.0) -> bool:
    if offline_mode():
        return False
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _quiet_datasets() -> None:
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()


@contextlib.contextmanager
def _silent_datasets() -> Iterator[None]:
    """No line from datasets' logger while it loads: its errors ("Failed to load JSON ...") would precede
    our own one-line error, and what they say is in the exception we turn into it."""
    _quiet_datasets()
    logger = logging.getLogger("datasets")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


def _fallback(builder: str | None, data_files: object, what: str) -> Any:
    """For a failed load of one local file: the rows as our own reader parses them (a JSON-lines file
    whose fields change type between lines), or an error naming the file and line. None: no opinion."""
    if (
        builder not in ("json", "text")
        or not isinstance(data_files, (str, Path))
        or not Path(data_files).is_file()
        or is_other_container(Path(data_files))
    ):
        return None
    if builder == "json":
        return read_jsonl(data_files, what)
    diagnose_text(data_files, what)
    return None


def load_split(
    location: str | Path,
    *,
    split: str,
    config: str | None = None,
    revision: str | None = None,
    data_files: str | list[str] | None = None,
    builder: str | None = None,
    what: str = "dataset",
    **kwargs: Any,
):
    """Load one split with ``datasets.load_dataset`` from a local folder/file or a Hub dataset id.

    The same call serves both: a local folder laid out like the Hub repository (README ``configs``)
    loads exactly as the Hub copy would. ``builder`` ("json", "csv") with ``data_files`` reads plain
    files, local or remote. A local JSON-lines file that pyarrow cannot read (a field changing type
    between lines) comes back as a list of row dicts read by ``formats.lines.read_jsonl``, which names
    the line of anything it cannot read.
    """
    import datasets

    local = Path(location).expanduser()
    is_local = local.exists() or builder is not None and data_files is not None and Path(str(data_files)).exists()
    if is_local:
        kwargs.setdefault("cache_dir", str(local_cache_dir(local)))
        one_file = Path(data_files) if builder and isinstance(data_files, (str, Path)) else None
        if one_file is not None and one_file.is_file():
            if one_file.stat().st_size == 0:
                raise DataError(f"{what} file {one_file} is empty (0 bytes)")
            if builder in ("json", "text"):
                check_utf8(one_file)
        try:
            with _silent_datasets():
                if builder:
                    return datasets.load_dataset(builder, data_files=data_files, split=split, **kwargs)
                return datasets.load_dataset(str(local), name=config, split=split, data_files=data_files, **kwargs)
        except (FileNotFoundError, ValueError, UnicodeDecodeError, StopIteration) as exc:
            # StopIteration: datasets' json builder on a file without records; UnicodeDecodeError: not UTF-8
            rows = _fallback(builder, data_files, what)
            if rows is not None:
                return rows
            raise DataError(f"could not read {what} from {local}: {first_line(exc)}") from None
        except datasets.exceptions.DatasetGenerationError as exc:
            rows = _fallback(builder, data_files, what)
            if rows is not None:
                return rows
            cause = exc.__cause__ or exc
            raise DataError(f"could not parse {what} in {local}: {first_line(cause)}") from None

    repo = str(location)
    if "/" not in repo or repo.startswith((".", "/", "~")):
        raise UserInputError(f"{what}: '{repo}' is neither an existing local path nor a Hub dataset id (org/name)")
    if not hub_reachable():
        if not offline_mode():
            raise hub_error(repo, revision, kind="dataset", what=what)
    try:
        with _silent_datasets():
            return datasets.load_dataset(repo, name=config, split=split, revision=revision, **kwargs)
    except (ConnectionError, OSError, datasets.exceptions.DatasetNotFoundError) as exc:
        if isinstance(exc, FileNotFoundError) or not hub_reachable() or offline_mode():
            raise hub_error(repo, revision, kind="dataset", what=what) from None
        raise DataError(f"could not load {what} {repo}@{revision or 'main'}: {first_line(exc)}") from None


def local_cache_dir(path: Path) -> Path:
    """A datasets cache folder keyed by the files' paths, sizes and modification times.

    datasets can reuse a stale Arrow cache for a local folder whose files were rewritten in place;
    keying the cache folder on file stats makes any edit produce a fresh parse.
    """
    import hashlib

    import datasets

    files = (
        [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
    )
    digest = hashlib.sha256()
    for file in files:
        stat = file.stat()
        digest.update(f"{file.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return Path(datasets.config.HF_DATASETS_CACHE) / "mtrbench-local" / digest.hexdigest()[:16]


def fetch_file(repo: str, filename: str, revision: str | None, what: str, required: bool = True) -> Path | None:
    """One raw file of a Hub dataset repository (for files ``datasets`` cannot parse as rows), via the
    HF cache; ``None`` for a missing optional file; one-line errors when it cannot be had."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    offline = offline_mode() or not hub_reachable()
    try:
        return Path(hf_hub_download(repo, filename, repo_type="dataset", revision=revision, local_files_only=offline))
    except LocalEntryNotFoundError:
        raise hub_error(repo, revision, kind="dataset", what=what) from None
    except EntryNotFoundError:
        if not required:
            return None
        raise DataError(f"{what}: {repo}@{revision or 'main'} has no file {filename}") from None
    except (OSError, ValueError) as exc:
        if offline:
            raise hub_error(repo, revision, kind="dataset", what=what) from None
        raise DataError(f"could not fetch {what} ({repo}/{filename}): {first_line(exc)}") from None


def hub_error(
    repo: str, revision: str | None, *, kind: str, what: str, local_option: str = "`--model DIR`"
) -> HubUnavailableError:
    rev = f"@{revision}" if revision else ""
    if kind == "model":
        how = (
            f"download it where the Hub is reachable (`hf download {repo}{' --revision ' + revision if revision else ''} "
            f"--local-dir DIR`) and pass {local_option}, or use `--model minilm`, which ships offline"
        )
    else:
        how = (
            f"download it where the Hub is reachable (`hf download {repo} --repo-type dataset"
            f"{' --revision ' + revision if revision else ''} --local-dir DIR`) and pass `--data-dir DIR`"
        )
    cached = " (if it is already in your HF cache, set HF_HUB_OFFLINE=1)" if not offline_mode() else ""
    return HubUnavailableError(
        f"cannot fetch {what} {repo}{rev} from the Hugging Face Hub (unreachable): {how}{cached}."
    )
