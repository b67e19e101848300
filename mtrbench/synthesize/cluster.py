"""Stage 2, greedy traversal clustering (MTR-SUITE §4.2, App. A.5.3).

The chunks' embeddings (L2-normalised: similarity is cosine) give a k-nearest-neighbour graph by exact
top-k (torch, or faiss's exact inner-product index; faiss HNSW, approximate, for large corpora). From a
seeded random start the walk steps to the most similar unvisited neighbour in the graph. When every neighbour of the current chunk
has been visited, the walk jumps to the most similar unvisited chunk over the whole corpus (exact search
over all unvisited chunks; ties go to the lower index). Every chunk is visited exactly once, so the path
is a permutation.

Then adjacent near-identical chunks are dropped (word 5-gram Jaccard similarity with the previous kept
chunk on the path at or above a threshold) and the path is cut every ``cluster_size`` chunks: every
cluster has exactly ``cluster_size`` chunks except possibly the last.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from mtrbench.data.model import Corpus
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.retrieve import build_retriever
from mtrbench.retrieve.dense import EmbeddingRetriever
from mtrbench.search.exact import full_search
from mtrbench.synthesize.curate import Chunk, shingles
from mtrbench.synthesize.workdir import finished_summary, read_jsonl, write_jsonl, write_summary

CLUSTERS = "clusters.jsonl"


@dataclass(frozen=True)
class ClusterOptions:
    model: str = "minilm"
    device: str = "cpu"
    neighbours: int = 64  # k of the kNN graph (a larger k leaves fewer dead ends, so fewer costly jumps)
    cluster_size: int = 8
    ngram_threshold: float = 0.5  # adjacent chunks with word 5-gram Jaccard >= this: the later one is dropped
    knn: str = "exact"  # exact (torch top-k) | faiss (exact flat index) | faiss-hnsw (approximate, large corpora)
    seed: int = 0

    def settings(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Traversal:
    path: list[int]
    jumps: int  # steps where every graph neighbour was visited and the walk jumped


KNN_CHOICES = ("exact", "faiss", "faiss-hnsw")
HNSW_LINKS = 32


def knn_graph(embeddings: torch.Tensor, neighbours: int, knn: str = "exact") -> np.ndarray:
    """For each row, the indices of its ``neighbours`` most similar other rows, most similar first.

    ``faiss-hnsw`` is approximate: a row may miss some of its true neighbours, and the walk then differs
    from the all-pairs greedy walk where it does (the jump stays exact)."""
    if knn not in KNN_CHOICES:
        raise UserInputError(f"--knn must be one of {', '.join(KNN_CHOICES)}, got '{knn}'")
    n = embeddings.shape[0]
    k = min(neighbours + 1, n)
    if knn != "exact":
        import faiss  # deferred: optional dependency, only for --knn faiss*

        vectors = np.ascontiguousarray(embeddings.float().cpu().numpy())
        if knn == "faiss":
            index = faiss.IndexFlatIP(vectors.shape[1])
        else:
            index = faiss.IndexHNSWFlat(vectors.shape[1], HNSW_LINKS, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efSearch = max(64, 2 * k)
        index.add(vectors)
        _, ids = index.search(vectors, k)
    else:
        # 1,024 x 65,536 float32 scores (256 MiB) at a time
        _, ids_t = full_search(embeddings, embeddings, k, query_chunk=1024, doc_chunk=65536)
        ids = ids_t.numpy()
    ids = np.asarray(ids, dtype=np.int64)
    # Drop each row's own index wherever ties put it (and faiss's -1 fillers): a stable sort moves the
    # entries to keep to the front in their order; a row that did not contain itself loses its last entry.
    drop = (ids == np.arange(n)[:, None]) | (ids < 0)
    order = np.argsort(drop, axis=1, kind="stable")
    kept = np.take_along_axis(ids, order, axis=1)
    kept[np.take_along_axis(drop, order, axis=1)] = -1
    graph = np.full((n, neighbours), -1, dtype=np.int64)
    width = min(neighbours, kept.shape[1])
    graph[:, :width] = kept[:, :width]
    return graph.astype(np.int32) if n < 2**31 else graph


def greedy_traversal(embeddings: torch.Tensor, graph: np.ndarray, start: int, show_progress: bool = False) -> Traversal:
    """The greedy walk described in the module docstring; ``embeddings`` must be L2-normalised.

    Because each graph row lists a chunk's most similar chunks in order, the first unvisited one is the
    most similar unvisited chunk of all; with the exact jump, the walk equals the all-pairs greedy walk.
    """
    n = embeddings.shape[0]
    device = embeddings.device
    visited = np.zeros(n, dtype=bool)
    visited[start] = True
    path = [start]
    jumps = 0
    # For the jump search: the not-yet-visited rows, compacted once half of them have been visited since,
    # and the steps taken since the last jump (marked on the device copy of ``visited`` only when needed).
    visited_on_device = torch.zeros(n, dtype=torch.bool, device=device)
    pool = torch.arange(n, device=device)
    pool_vectors = embeddings
    unsynced = [start]
    current = start
    bar = tqdm(total=n, desc="Cluster: greedy traversal", unit="chunk", disable=not show_progress)
    bar.update(1)
    while len(path) < n:
        step = next((int(j) for j in graph[current] if j >= 0 and not visited[j]), None)
        if step is None:
            jumps += 1
            visited_on_device[torch.as_tensor(unsynced, device=device)] = True
            unsynced = []
            alive = ~visited_on_device[pool]
            if int(alive.sum()) * 2 < pool.shape[0]:
                pool, pool_vectors = pool[alive], pool_vectors[alive]
                alive = torch.ones(pool.shape[0], dtype=torch.bool, device=device)
            scores = (pool_vectors @ embeddings[current]).float()
            scores[~alive] = float("-inf")
            # the lowest index among ties: pool is in increasing index order and argmax takes the first maximum
            step = int(pool[int(torch.argmax(scores))])
        visited[step] = True
        unsynced.append(step)
        path.append(step)
        current = step
        bar.update(1)
    bar.close()
    return Traversal(path=path, jumps=jumps)


def drop_adjacent_near_identical(
    path: list[int], texts: list[str], threshold: float, n: int = 5
) -> tuple[list[int], list[int]]:
    """(kept path, dropped): a chunk whose word n-gram set has Jaccard >= threshold with the previous kept
    chunk on the path is dropped (App. A.5.3: related, not identical, information within a cluster)."""
    kept: list[int] = []
    dropped: list[int] = []
    previous: set[str] | None = None
    for node in path:
        grams = shingles(texts[node], n)
        if previous is not None and grams and previous:
            overlap = len(grams & previous) / len(grams | previous)
            if overlap >= threshold:
                dropped.append(node)
                continue
        kept.append(node)
        previous = grams
    return kept, dropped


def cut(path: list[int], size: int) -> list[list[int]]:
    return [path[i : i + size] for i in range(0, len(path), size)]


def embed_chunks(chunks: list[Chunk], model: str, device: str, show_progress: bool) -> torch.Tensor:
    """The chunks' embeddings through the model's retriever: mtrbench's encoding engine and embedding cache."""
    retriever = build_retriever(model, device=device, show_progress=show_progress)
    if not isinstance(retriever, EmbeddingRetriever):
        raise UserInputError(
            f"clustering needs an embedding model; '{model}' is not one (bm25, hybrids and "
            "rerankers have no single vector per chunk): try --embedding-model minilm"
        )
    retriever.index(Corpus([c.chunk_id for c in chunks], [c.title for c in chunks], [c.text for c in chunks]))
    return retriever.corpus_embeddings


def cluster_embeddings(
    embeddings: torch.Tensor, texts: list[str], options: ClusterOptions, show_progress: bool = False
) -> tuple[list[list[int]], dict[str, Any]]:
    n = embeddings.shape[0]
    if n == 0:
        raise DataError("no chunks to cluster")
    vectors = torch.nn.functional.normalize(embeddings.float(), dim=1)
    graph = knn_graph(vectors, options.neighbours, options.knn)
    start = int(np.random.default_rng(options.seed).integers(n))
    walk = greedy_traversal(vectors, graph, start, show_progress)
    kept, dropped = drop_adjacent_near_identical(walk.path, texts, options.ngram_threshold)
    clusters = cut(kept, options.cluster_size)
    return clusters, {
        "start": start,
        "jumps": walk.jumps,
        "path_length": len(walk.path),
        "dropped_near_identical": len(dropped),
        "clusters": len(clusters),
    }


def run_cluster(
    chunks: list[Chunk], folder: Path, options: ClusterOptions, upstream: str, show_progress: bool = True
) -> dict[str, Any]:
    settings = {"curate": upstream, **options.settings()}
    done = finished_summary(folder, settings)
    if done is not None and (folder / CLUSTERS).is_file():
        return done
    if options.cluster_size < 1 or options.neighbours < 1:
        raise UserInputError("--cluster-size and --neighbours must be at least 1")
    embeddings = embed_chunks(chunks, options.model, options.device, show_progress)
    clusters, facts = cluster_embeddings(embeddings, [c.text for c in chunks], options, show_progress)
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(
        folder / CLUSTERS,
        [{"cluster_id": i, "chunk_ids": [chunks[j].chunk_id for j in members]} for i, members in enumerate(clusters)],
    )
    return write_summary(
        folder,
        settings,
        {
            **facts,
            "chunks": len(chunks),
            "embedding_model": options.model,
            "knn": {
                "exact": "exact torch top-k",
                "faiss": "faiss IndexFlatIP (exact)",
                "faiss-hnsw": "faiss HNSW (approximate)",
            }[options.knn],
            "jump_rule": "most similar unvisited chunk over the whole corpus",
        },
    )


def read_clusters(folder: Path) -> list[list[str]]:
    return [row["chunk_ids"] for row in read_jsonl(folder / CLUSTERS)]
