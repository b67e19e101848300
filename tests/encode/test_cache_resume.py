"""Embedding cache under interruption and misuse: shards sized by time and bytes, per-shard sha256,
the per-entry lock, and a real `mtrbench eval` killed mid-encoding and resumed."""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

import mtrbench.encode.cache as cache_module
from mtrbench.cli import main
from mtrbench.encode.cache import CacheKey, EmbeddingCache, ShardLimits, corpus_fingerprint, tensor_sha256
from mtrbench.infra.errors import MtrbenchError

ROOT = Path(__file__).resolve().parents[2]
N_TEXTS = 30


# -- with a fake encoder: layout, hashes, locking ---------------------------------------------------


def make_key(n: int = N_TEXTS, dtype: str = "fp32") -> tuple[CacheKey, list[str]]:
    texts = [f"text {i}" for i in range(n)]
    key = CacheKey(
        model="m",
        revision="r",
        prompt="",
        pipeline={},
        normalize=False,
        max_length=8,
        dtype=dtype,
        corpus=corpus_fingerprint([str(i) for i in range(n)], texts),
        n_docs=n,
    )
    return key, texts


class FakeEncoder:
    """Row i's embedding is (i, i + 0.5, -i); records the chunk sizes of each call; can advance a fake
    clock per block, stop after some blocks, or wait on an event."""

    def __init__(
        self,
        clock: list[float] | None = None,
        tick: float = 1.0,
        die_after: int | None = None,
        gate: threading.Event | None = None,
    ) -> None:
        self.clock, self.tick, self.die_after, self.gate = clock, tick, die_after, gate
        self.calls: list[list[int]] = []
        self.started = threading.Event()

    def __call__(self, todo, sizes, on_chunk):
        self.calls.append(list(sizes))
        self.started.set()
        if self.gate is not None:
            self.gate.wait(10)
        start = 0
        for i, size in enumerate(sizes):
            if self.die_after is not None and i == self.die_after:
                raise KeyboardInterrupt
            if self.clock is not None:
                self.clock[0] += self.tick
            rows = [int(t.split()[1]) for t in todo[start : start + size]]
            on_chunk(i, torch.tensor([[r, r + 0.5, -r] for r in rows], dtype=torch.float32))
            start += size


def expected_rows(n: int = N_TEXTS) -> torch.Tensor:
    return torch.tensor([[r, r + 0.5, -r] for r in range(n)], dtype=torch.float32)


def manifest_of(cache: EmbeddingCache, key: CacheKey) -> dict:
    return json.loads((cache.root / key.digest() / "manifest.json").read_text())


def layout(cache: EmbeddingCache, key: CacheKey) -> list[tuple[int, int]]:
    return [(s["start"], s["end"]) for s in manifest_of(cache, key)["shards"]]


@pytest.fixture
def fake_clock(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(cache_module, "_clock", lambda: clock[0])
    return clock


def test_a_shard_closes_at_the_first_block_end_after_its_time_limit(tmp_path, fake_clock):
    cache = EmbeddingCache(tmp_path, ShardLimits(seconds=2.5, block=4), lock_wait_s=0)
    key, texts = make_key()
    encoder = FakeEncoder(fake_clock, tick=1.0)  # each block of 4 texts takes one second
    embeddings, report = cache.load_or_encode(key, texts, encoder)
    assert encoder.calls == [[4, 4, 4, 4, 4, 4, 4, 2]]
    assert layout(cache, key) == [(0, 12), (12, 24), (24, 30)]  # 3 s, 3 s, then the end of the corpus
    assert [s["seconds"] for s in manifest_of(cache, key)["shards"]] == [3.0, 3.0, 2.0]
    assert torch.equal(embeddings, expected_rows())
    assert (report.shards, report.encoded, report.loaded, report.texts_encoded, report.texts_loaded) == (3, 3, 0, 30, 0)


def test_a_shard_closes_at_its_byte_limit_whichever_comes_first(tmp_path, fake_clock):
    block_bytes = 4 * 3 * 4  # 4 rows of 3 fp32 values
    cache = EmbeddingCache(tmp_path, ShardLimits(seconds=3.5, bytes=2 * block_bytes, block=4), lock_wait_s=0)
    key, texts = make_key()
    cache.load_or_encode(key, texts, FakeEncoder(fake_clock, tick=1.0))
    assert layout(cache, key) == [(0, 8), (8, 16), (16, 24), (24, 30)]  # bytes first (2 s < 3.5 s)

    slower = EmbeddingCache(
        tmp_path / "slower", ShardLimits(seconds=3.5, bytes=10 * block_bytes, block=4), lock_wait_s=0
    )
    slower.load_or_encode(key, texts, FakeEncoder(fake_clock, tick=2.0))
    assert layout(slower, key) == [(0, 8), (8, 16), (16, 24), (24, 30)]  # time first (4 s >= 3.5 s)


def test_manifest_records_layout_hashes_and_limits(tmp_path):
    cache = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=0)
    key, texts = make_key()
    cache.load_or_encode(key, texts, FakeEncoder())
    manifest = manifest_of(cache, key)
    assert manifest["format"] == 2 and manifest["complete"] is True and manifest["dim"] == 3
    assert manifest["limits"] == {"seconds": 0, "bytes": 256 * 2**20, "texts": None, "block": 8}
    assert [(s["file"], s["start"], s["end"]) for s in manifest["shards"]] == [
        ("shard-00000.safetensors", 0, 8),
        ("shard-00001.safetensors", 8, 16),
        ("shard-00002.safetensors", 16, 24),
        ("shard-00003.safetensors", 24, 30),
    ]
    from safetensors.torch import load_file

    for shard in manifest["shards"]:
        tensor = load_file(str(cache.root / key.digest() / shard["file"]))["embeddings"]
        assert shard["sha256"] == tensor_sha256(tensor)
        assert torch.equal(tensor, expected_rows()[shard["start"] : shard["end"]])
    assert sorted(p.name for p in (cache.root / key.digest()).iterdir()) == [
        "manifest.json",
        *(s["file"] for s in manifest["shards"]),
    ]  # no lock or temporary file left


def test_resume_continues_at_the_first_missing_text_on_the_block_grid(tmp_path):
    key, texts = make_key()
    first = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=6), lock_wait_s=0)
    with pytest.raises(KeyboardInterrupt):
        first.load_or_encode(key, texts, FakeEncoder(die_after=2))  # killed while encoding the third block
    assert layout(first, key) == [(0, 6), (6, 12)] and manifest_of(first, key)["complete"] is False
    assert not (tmp_path / key.digest() / ".lock").exists()  # released on the way out

    # a later run with another block size starts at text 12 and realigns to its own grid
    second = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=0)
    encoder = FakeEncoder()
    embeddings, report = second.load_or_encode(key, texts, encoder)
    assert encoder.calls == [[4, 8, 6]]  # 12-16, 16-24, 24-30
    assert (report.loaded, report.encoded, report.texts_loaded, report.texts_encoded) == (2, 3, 12, 18)
    assert torch.equal(embeddings, expected_rows())


def test_a_shard_overwritten_with_other_finite_values_is_caught_by_its_hash(tmp_path):
    cache = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=0)
    key, texts = make_key()
    clean, _ = cache.load_or_encode(key, texts, FakeEncoder())
    folder = tmp_path / key.digest()
    # same shape, dtype, metadata and finite values: only the recorded hash can tell
    cache._write_shard(folder / "shard-00001.safetensors", clean[8:16].flip(0).contiguous(), key.digest(), 1, (8, 16))
    encoder = FakeEncoder()
    healed, report = cache.load_or_encode(key, texts, encoder)
    assert report.corrupt == 1 and report.messages == [
        "shard 1: content differs from the sha256 recorded when it was written"
    ]
    assert encoder.calls == [[8]] and (report.texts_encoded, report.texts_loaded) == (8, 22)
    assert torch.equal(healed, clean)
    assert not (folder / "shard-00001.safetensors").exists()  # replaced by a new file, the old one removed
    again, report = cache.load_or_encode(key, texts, FakeEncoder())
    assert report.hit and report.corrupt == 0 and torch.equal(again, clean)


def plant_lock(folder: Path, pid: int, host: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".lock"
    path.write_text(
        json.dumps({"pid": pid, "host": host, "started": "2030-01-01T00:00:00+00:00", "token": "someone-else"})
    )
    return path


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize("host", ["build-box-7", None])  # another host; this host (a live pid: ours)
def test_a_live_lock_stops_a_second_writer_naming_the_holder(tmp_path, host):
    cache = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=0)
    key, texts = make_key()
    host = host or socket.gethostname()
    lock = plant_lock(tmp_path / key.digest(), os.getpid(), host)
    encoder = FakeEncoder()
    with pytest.raises(MtrbenchError, match=f"being written by pid {os.getpid()} on host {host} "):
        cache.load_or_encode(key, texts, encoder)
    assert encoder.calls == [] and lock.exists()


def test_a_writer_waits_a_bounded_time_for_a_live_lock(tmp_path, caplog):
    cache = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=1.0)
    key, texts = make_key()
    plant_lock(tmp_path / key.digest(), os.getpid(), "build-box-7")
    began = time.monotonic()
    with caplog.at_level(logging.WARNING), pytest.raises(MtrbenchError, match="waited 1 s"):
        cache.load_or_encode(key, texts, FakeEncoder())
    assert time.monotonic() - began >= 1.0
    assert "being written by pid" in caplog.text and "waiting up to 1 s" in caplog.text


def test_a_writer_proceeds_when_the_lock_is_released_while_it_waits(tmp_path):
    cache = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=30)
    key, texts = make_key()
    lock = plant_lock(tmp_path / key.digest(), os.getpid(), "build-box-7")
    threading.Timer(0.5, lock.unlink).start()
    embeddings, report = cache.load_or_encode(key, texts, FakeEncoder())
    assert report.lock_wait_s >= 0.4 and torch.equal(embeddings, expected_rows())


def test_a_stale_lock_on_this_host_is_taken_over_with_a_warning(tmp_path, caplog):
    cache = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=0)
    key, texts = make_key()
    pid = dead_pid()
    lock = plant_lock(tmp_path / key.digest(), pid, socket.gethostname())
    with caplog.at_level(logging.WARNING):
        embeddings, report = cache.load_or_encode(key, texts, FakeEncoder())
    assert f"taking over the lock of pid {pid} on host {socket.gethostname()}" in caplog.text
    assert report.texts_encoded == N_TEXTS and torch.equal(embeddings, expected_rows())
    assert not lock.exists()


def test_a_dead_pid_on_another_host_is_not_stale(tmp_path):
    cache = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=0)
    key, texts = make_key()
    plant_lock(tmp_path / key.digest(), dead_pid(), "build-box-7")  # cannot be checked from here
    with pytest.raises(MtrbenchError, match="build-box-7"):
        cache.load_or_encode(key, texts, FakeEncoder())


def test_a_second_concurrent_run_waits_and_reuses_the_first_runs_work(tmp_path):
    key, texts = make_key()
    gate = threading.Event()
    slow = FakeEncoder(gate=gate)
    results = {}

    def first():
        results["first"] = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=0).load_or_encode(
            key, texts, slow
        )

    thread = threading.Thread(target=first)
    thread.start()
    assert slow.started.wait(10)  # the first run holds the lock and is encoding
    threading.Timer(0.5, gate.set).start()
    second = FakeEncoder()
    embeddings, report = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=30).load_or_encode(
        key, texts, second
    )
    thread.join()
    assert second.calls == [] and report.hit and report.texts_loaded == N_TEXTS and report.lock_wait_s > 0
    assert torch.equal(embeddings, results["first"][0])


def test_a_complete_entry_is_read_without_the_lock(tmp_path):
    cache = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=0)
    key, texts = make_key()
    cache.load_or_encode(key, texts, FakeEncoder())
    lock = plant_lock(tmp_path / key.digest(), os.getpid(), "build-box-7")
    embeddings, report = cache.load_or_encode(key, texts, FakeEncoder())
    assert report.hit and torch.equal(embeddings, expected_rows()) and lock.exists()


def test_cache_rm_spares_an_entry_being_written(tmp_path, capsys):
    cache = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=0)
    key, texts = make_key()
    cache.load_or_encode(key, texts, FakeEncoder())
    lock = plant_lock(tmp_path / key.digest(), os.getpid(), socket.gethostname())
    assert main(["cache", "ls", "--cache-dir", str(tmp_path)]) == 0
    assert "writing" in capsys.readouterr().out
    assert main(["cache", "rm", "--all", "--cache-dir", str(tmp_path)]) == 0
    assert "removed 0 cache entries" in capsys.readouterr().out and (tmp_path / key.digest()).is_dir()
    lock.unlink()
    assert main(["cache", "rm", "--all", "--cache-dir", str(tmp_path)]) == 0
    assert not (tmp_path / key.digest()).exists()


def test_an_old_format_entry_is_listed_and_encoded_again_in_place(tmp_path, capsys):
    key, texts = make_key()
    folder = tmp_path / key.digest()
    folder.mkdir()
    (folder / "manifest.json").write_text(
        json.dumps(
            {
                "format": 1,
                "key": key.digest(),
                "fields": {"model": "m", "n_docs": N_TEXTS, "dtype": "fp32"},
                "shard_docs": 50_000,
                "n_shards": 1,
                "dim": 3,
                "complete": True,
            }
        )
    )
    from safetensors.torch import save_file

    save_file(
        {"embeddings": torch.zeros(N_TEXTS, 3)},
        str(folder / "shard-00000.safetensors"),
        metadata={"key": key.digest(), "shard": "0"},
    )  # no hash to check it against
    assert main(["cache", "ls", "--cache-dir", str(tmp_path)]) == 0
    assert "old format" in capsys.readouterr().out
    encoder = FakeEncoder()
    embeddings, report = EmbeddingCache(tmp_path, ShardLimits(seconds=0, block=8), lock_wait_s=0).load_or_encode(
        key, texts, encoder
    )
    assert report.texts_encoded == N_TEXTS and torch.equal(embeddings, expected_rows())
    assert manifest_of(EmbeddingCache(tmp_path), key)["format"] == 2


def test_engine_windows_of_a_chunk_do_not_depend_on_the_chunks_before_it():
    from mtrbench.encode.engine import MAX_WINDOW, _windows

    def relative(windows, chunk):
        first = min(start for index, start, _, _ in windows if index == chunk)
        return [(start - first, end - first) for index, start, end, _ in windows if index == chunk]

    for size in (100, 8192, MAX_WINDOW, 40_000):
        alone = relative(_windows([size]), 0)
        assert relative(_windows([3000, 50_000, size]), 2) == alone
        assert alone[-1][1] == size
    assert _windows([8192]) == [(0, 0, 8192, True)]  # a cache block is one sorting window


def test_limits_from_the_environment(monkeypatch):
    monkeypatch.setenv("MTRBENCH_CACHE_SHARD_SECONDS", "0.5")
    monkeypatch.setenv("MTRBENCH_CACHE_SHARD_MB", "2")
    monkeypatch.setenv("MTRBENCH_CACHE_BLOCK_TEXTS", "100")
    monkeypatch.setenv("MTRBENCH_CACHE_LOCK_WAIT", "7")
    cache = EmbeddingCache("/nonexistent")
    assert cache.limits == ShardLimits(seconds=0.5, bytes=2 * 2**20, block=100) and cache.lock_wait_s == 7
    monkeypatch.setenv("MTRBENCH_CACHE_SHARD_SECONDS", "soon")
    with pytest.raises(MtrbenchError, match="MTRBENCH_CACHE_SHARD_SECONDS='soon'"):
        EmbeddingCache("/nonexistent")
    for name in ("MTRBENCH_CACHE_SHARD_SECONDS", "MTRBENCH_CACHE_SHARD_MB", "MTRBENCH_CACHE_BLOCK_TEXTS"):
        monkeypatch.delenv(name)
    assert ShardLimits.from_env() == ShardLimits()
    assert (ShardLimits().block_texts("cpu"), ShardLimits().block_texts("cuda:0", 2)) == (256, 16_384)


# -- `mtrbench eval` on a 3,000-passage task ---------------------------------------------------------

N_PASSAGES = 3000
BLOCK = 250  # 12 blocks; with a 0 s time limit each is its own shard, however fast the machine encodes
LIMITS = {"MTRBENCH_CACHE_SHARD_SECONDS": "0", "MTRBENCH_CACHE_BLOCK_TEXTS": str(BLOCK)}
WORDS = (
    "lake glacier bridge river moraine trough gneiss meltwater basin highland province ridge valley "
    "harbour ferry tunnel quarry granite delta estuary marsh canal lock weir mill forge tower"
).split()


def write_task(folder: Path) -> Path:
    rng = random.Random(7)
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "data" / "native-mini" / "README.md", folder)  # its dataset card: the file layout
    with (folder / "corpus.jsonl").open("w") as handle:
        for i in range(N_PASSAGES):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6)))
            handle.write(json.dumps({"_id": f"d{i:04d}", "title": "", "text": text}) + "\n")
    (folder / "conversations").mkdir()
    with (folder / "conversations" / "test.jsonl").open("w") as handle:
        for c in range(4):
            messages = []
            for _t in range(3):
                question = " ".join(rng.choice(WORDS) for _ in range(3))
                messages += [
                    {
                        "role": "user",
                        "content": question,
                        "rewrite": question,
                        "qrels": [{"doc_id": f"d{rng.randrange(N_PASSAGES):04d}", "score": 1}],
                    },
                    {"role": "assistant", "content": "noted"},
                ]
            handle.write(json.dumps({"conversation_id": f"c{c}", "switch_turn": -1, "messages": messages}) + "\n")
    return folder


def eval_args(task: Path, cache: Path, out: Path) -> list[str]:
    return [
        "eval",
        "--model",
        "minilm",
        "--task",
        str(task),
        "--device",
        "cpu",
        "--max-length",
        "12",
        "--history",
        "rewrite",
        "--cache-dir",
        str(cache),
        "--output-dir",
        str(out),
        "--quiet",
    ]


def outputs(out: Path) -> tuple[bytes, dict]:
    [run] = list(out.rglob("*.run.trec"))
    [result] = [p for p in out.rglob("*.json") if p.name != "model_meta.json"]
    return run.read_bytes(), json.loads(result.read_text())["mtrbench"]["embedding_cache"]


def only_manifest(cache: Path) -> dict:
    [path] = list(cache.glob("*/manifest.json"))
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    """An uninterrupted run into a fresh cache: (task, cache folder, run file bytes, cache report, seconds)."""
    base = tmp_path_factory.mktemp("clean")
    task = write_task(base / "task")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in LIMITS.items():
            patch.setenv(name, value)
        began = time.monotonic()
        assert main(eval_args(task, base / "cache", base / "out")) == 0
    run, report = outputs(base / "out")
    return task, base / "cache", run, report, time.monotonic() - began


@pytest.mark.slow
def test_clean_run_writes_several_time_limited_shards(clean_run):
    _, cache, _, report, _ = clean_run
    manifest = only_manifest(cache)
    assert manifest["complete"] and manifest["limits"]["block"] == BLOCK and manifest["limits"]["seconds"] == 0
    sizes = [s["end"] - s["start"] for s in manifest["shards"]]
    # a 0 s limit closes every shard at its first block's end: one block each
    assert sum(sizes) == N_PASSAGES and sizes == [BLOCK] * (N_PASSAGES // BLOCK)
    assert report["texts_encoded"] == N_PASSAGES and report["encoded"] == report["shards"] == len(sizes)


@pytest.mark.slow
def test_eval_killed_mid_encoding_resumes_and_writes_the_same_run(clean_run, tmp_path, monkeypatch, caplog):
    task, _, clean_bytes, _, _ = clean_run
    cache, out = tmp_path / "cache", tmp_path / "out"
    env = {**os.environ, **LIMITS, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mtrbench.cli", *eval_args(task, cache, tmp_path / "killed")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if only_manifest(cache)["shards"]:
                    break
            except (ValueError, FileNotFoundError):
                pass
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        stderr = proc.communicate(timeout=60)[1].decode(errors="replace")
    assert proc.returncode == -signal.SIGKILL, stderr[-2000:]
    at_kill = only_manifest(cache)
    on_disk = sum(s["end"] - s["start"] for s in at_kill["shards"])
    assert not at_kill["complete"] and 0 < on_disk < N_PASSAGES
    assert (cache / at_kill["key"] / ".lock").exists()  # the killed run's lock, now stale

    for name, value in LIMITS.items():
        monkeypatch.setenv(name, value)
    with caplog.at_level(logging.WARNING):
        assert main(eval_args(task, cache, out)) == 0
    run, report = outputs(out)
    assert f"taking over the lock of pid {proc.pid}" in caplog.text
    # Every text listed on disk at the kill is loaded, not encoded again; the resumed run starts at the first
    # missing text. What the killed run had encoded beyond that was one unfinished shard: every shard
    # holds a single block here, so less than BLOCK texts were encoded twice.
    assert report["corrupt"] == 0 and report["texts_loaded"] == on_disk
    assert report["texts_encoded"] == N_PASSAGES - on_disk
    assert all(s["end"] - s["start"] <= BLOCK for s in only_manifest(cache)["shards"])
    assert run == clean_bytes  # byte-identical to the uninterrupted run


@pytest.mark.slow
def test_eval_with_an_overwritten_shard_re_encodes_it_and_writes_the_same_run(clean_run, tmp_path, monkeypatch, caplog):
    task, clean_cache, clean_bytes, _, _ = clean_run
    cache = tmp_path / "cache"
    shutil.copytree(clean_cache, cache)
    manifest = only_manifest(cache)
    shard = manifest["shards"][1]
    path = cache / manifest["key"] / shard["file"]
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(path), framework="pt") as handle:
        metadata, tensor = handle.metadata(), handle.get_tensor("embeddings")
    save_file({"embeddings": tensor.roll(1, dims=0).contiguous()}, str(path), metadata=metadata)  # rows swapped
    for name, value in LIMITS.items():
        monkeypatch.setenv(name, value)
    with caplog.at_level(logging.WARNING):
        assert main(eval_args(task, cache, tmp_path / "out")) == 0
    run, report = outputs(tmp_path / "out")
    assert report["corrupt"] == 1 and report["texts_encoded"] == shard["end"] - shard["start"]
    assert report["messages"] == ["shard 1: content differs from the sha256 recorded when it was written"]
    assert "1 corrupt shard(s) re-encoded" in caplog.text
    assert run == clean_bytes


@pytest.mark.slow
def test_eval_stops_with_one_error_line_when_another_run_holds_the_entry(clean_run, tmp_path, monkeypatch, capsys):
    task, clean_cache, _, _, _ = clean_run
    cache = tmp_path / "cache"
    shutil.copytree(clean_cache, cache)
    manifest = only_manifest(cache)
    (cache / manifest["key"] / manifest["shards"][0]["file"]).unlink()  # work to do: a writer is needed
    plant_lock(cache / manifest["key"], os.getpid(), "build-box-7")
    monkeypatch.setenv("MTRBENCH_CACHE_LOCK_WAIT", "0")
    for name, value in LIMITS.items():
        monkeypatch.setenv(name, value)
    assert main(eval_args(task, cache, tmp_path / "out")) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"being written by pid {os.getpid()} on host build-box-7" in errors[0]
    assert not list((tmp_path / "out").rglob("*.run.trec"))
