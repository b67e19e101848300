"""Corpus encoding on Ray (a local 2-CPU cluster, a tiny random-weight BERT): the same embeddings, cache
entry and run as a single process; a worker killed mid-block is retried without a lost or doubled
shard; a killed driver's rerun encodes only the missing shards; sharded search through Ray workers."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

ray = pytest.importorskip("ray")

from tiny_model import make_tiny_model  # noqa: E402

import mtrbench.encode.cache as cache_module  # noqa: E402
from mtrbench.data.model import Corpus  # noqa: E402
from mtrbench.encode.distributed import FAULT_ENV  # noqa: E402
from mtrbench.retrieve import build_retriever  # noqa: E402

pytestmark = pytest.mark.slow  # every test here is an end-to-end run over 10 s

ROOT = Path(__file__).resolve().parents[2]
N = 1200
BLOCK = 100  # 12 blocks; a 0 s shard limit makes each its own shard
LIMITS = {"MTRBENCH_CACHE_SHARD_SECONDS": "0", "MTRBENCH_CACHE_BLOCK_TEXTS": str(BLOCK)}
WORDS = "lake glacier bridge river moraine trough gneiss meltwater basin highland ferry tunnel quarry".split()


@pytest.fixture(scope="module")
def cluster():
    """One local Ray for the module: 2 CPUs, so 2 CPU encoding actors."""
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def setup(tmp_path_factory, cluster):
    """The tiny model, a corpus, and a single-process run into its own cache: (model, corpus, reference
    embeddings, reference hits, cache root)."""
    base = tmp_path_factory.mktemp("ray")
    model = make_tiny_model(base / "tiny")
    rng = random.Random(3)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14))) for _ in range(N)]
    corpus = Corpus([f"d{i}" for i in range(N)], [""] * N, texts)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in LIMITS.items():
            patch.setenv(name, value)
        single = build_retriever(str(model), device="cpu", show_progress=False, cache_dir=str(base / "single"))
        single.index(corpus)
    folder = only_entry(base / "single")
    embeddings = torch.cat([shard_tensor(folder, s) for s in manifest(folder)["shards"]])
    return model, corpus, embeddings, single.search(texts[:40], 10), base


def only_entry(root: Path) -> Path:
    [path] = list(root.glob("*/manifest.json"))
    return path.parent


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def shard_tensor(folder: Path, shard: dict) -> torch.Tensor:
    from safetensors.torch import load_file

    return load_file(str(folder / shard["file"]))["embeddings"]


def ray_retriever(model: Path, cache: Path, address: str):
    return build_retriever(
        str(model), device="cpu", show_progress=False, cache_dir=str(cache), ray=address, ray_workers=2
    )


def assert_same_entry(folder: Path, reference: torch.Tensor) -> None:
    """Complete, disjoint shards covering the corpus on the block grid, every file listed once and none
    unlisted, each equal (cosine >= 0.9999) to the single-process embeddings of its rows."""
    data = manifest(folder)
    assert data["complete"]
    spans = [(s["start"], s["end"]) for s in data["shards"]]
    assert spans == [(a, a + BLOCK) for a in range(0, N, BLOCK)]
    files = sorted(p.name for p in folder.glob("shard-*.safetensors"))
    assert files == sorted(s["file"] for s in data["shards"]) and len(set(files)) == len(files)
    for shard in data["shards"]:
        got = shard_tensor(folder, shard)
        cos = F.cosine_similarity(got, reference[shard["start"] : shard["end"]], dim=1)
        assert float(cos.min()) >= 0.9999


def test_ray_encoding_with_a_worker_killed_mid_block_writes_the_single_process_entry_and_run(
    setup, cluster, tmp_path, monkeypatch
):
    """One run checks both: Ray's retry of a dead actor's block, and equality with the single process
    (a retried block that went missing or was written twice would show in the entry either way)."""
    model, corpus, reference, hits, base = setup
    for name, value in LIMITS.items():
        monkeypatch.setenv(name, value)
    marker = tmp_path / "died"
    monkeypatch.setenv(FAULT_ENV, f"block=5,marker={marker}")
    writes: list[str] = []
    original = cache_module.EmbeddingCache._write_shard

    def counting(self, path, *args, **kwargs):
        writes.append(Path(path).name)
        return original(self, path, *args, **kwargs)

    monkeypatch.setattr(cache_module.EmbeddingCache, "_write_shard", counting)
    retriever = ray_retriever(model, tmp_path, cluster)
    retriever.index(corpus)
    assert marker.exists() and int(marker.read_text()) != os.getpid()  # an actor process exited inside block 5
    assert sorted(writes) == sorted(set(writes)) and len(writes) == N // BLOCK  # each shard written once
    folder = only_entry(tmp_path)
    assert folder.name == only_entry(base / "single").name  # the same key: one cache for both
    assert_same_entry(folder, reference)
    assert retriever.cache_report.texts_encoded == N and retriever.cache_report.encoded == N // BLOCK
    assert retriever.doc_engine.calls == 0  # every block was encoded by the actors
    got = retriever.search(corpus.texts[:40], 10)  # sharded over 2 Ray workers reading the cache's shards
    assert [ids for ids, _ in got] == [ids for ids, _ in hits]
    for (_, s_got), (_, s_ref) in zip(got, hits):
        assert s_got == pytest.approx(s_ref, abs=1e-4)
    assert retriever.settings()["search_execution"]["mode"] == "sharded"


DRIVER = """
import sys
sys.path.insert(0, {tests!r})
from mtrbench.data.model import Corpus
from mtrbench.retrieve import build_retriever
texts = {texts!r}
corpus = Corpus([f"d{{i}}" for i in range(len(texts))], [""] * len(texts), texts)
retriever = build_retriever({model!r}, device="cpu", show_progress=False, cache_dir={cache!r}, ray={address!r},
                            ray_workers=2)
retriever.index(corpus)
"""


def test_a_killed_driver_leaves_whole_shards_and_the_rerun_encodes_only_the_missing_ones(
    setup, cluster, tmp_path, monkeypatch
):
    model, corpus, reference, _, _ = setup
    cache = tmp_path / "cache"
    script = DRIVER.format(
        tests=str(ROOT / "tests"), texts=corpus.texts, model=str(model), cache=str(cache), address=cluster
    )
    # each block sleeps 0.5 s in its actor: the driver is killed with work in flight
    env = {
        **os.environ,
        **LIMITS,
        FAULT_ENV: "sleep=0.5",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if len(manifest(only_entry(cache))["shards"]) >= 3:
                    break
            except (ValueError, FileNotFoundError):
                pass
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        stderr = proc.communicate(timeout=60)[1].decode(errors="replace")
    assert proc.returncode == -signal.SIGKILL, stderr[-3000:]
    at_kill = manifest(only_entry(cache))
    on_disk = sum(s["end"] - s["start"] for s in at_kill["shards"])
    assert not at_kill["complete"] and 0 < on_disk < N

    for name, value in LIMITS.items():
        monkeypatch.setenv(name, value)
    retriever = ray_retriever(model, cache, cluster)
    retriever.index(corpus)
    report = retriever.cache_report
    assert report.texts_loaded == on_disk and report.loaded == len(at_kill["shards"])
    assert report.texts_encoded == N - on_disk  # only the missing shards
    assert retriever.doc_engine.calls == 0  # nothing encoded in the driver itself
    assert_same_entry(only_entry(cache), reference)
