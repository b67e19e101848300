"""Results of different model kinds never share a folder or a leaderboard system, and their model_meta.json says
their kind as mteb 2.x names it (checked by mteb's own ModelMeta)."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import get_args

import pytest

from mtrbench.leaderboard.build import group_entries
from mtrbench.leaderboard.keys import identity, system_identity
from mtrbench.results.model_meta import model_meta
from mtrbench.results.settings import ResultSettings
from mtrbench.retrieve.registry import alias
from mtrbench.serialize.history import QueryFormat


def _folder(retriever: dict, history: str = "full", limit: int | None = None) -> str | None:
    settings = ResultSettings(history=history, query_format=asdict(QueryFormat()), retriever=retriever, limit=limit)
    return settings.experiment_name(truncate="left", truncation_applies=True, max_length=None)


def test_a_non_dense_kind_names_its_folder_and_dense_and_bm25_keep_theirs():
    assert _folder({"kind": "dense", "model": "m"}) is None  # default settings: mteb's plain layout, as before
    assert _folder({"kind": "sparse", "k1": 0.9}) is None  # BM25 records "sparse": its folders stay as they were
    assert _folder({"kind": "learned-sparse"}) == "kind=sparse"
    assert _folder({"kind": "multi-vector"}) == "kind=multi-vector"
    chunked = {"kind": "parent-child", "chunking": "sentences:3:1", "children_retriever": {"kind": "multi-vector"}}
    assert _folder(chunked) == "kind=multi-vector"
    assert _folder({"kind": "learned-sparse"}, "rewrite", limit=2) == "kind=sparse__history=rewrite__limit=2"


class _Retriever:
    """What model_meta reads of a retriever, around a registered alias."""

    def __init__(self, name: str, kind: str, similarity: str) -> None:
        self.spec = alias(name)
        self.name, self.revision, self.max_length = self.spec.model_id, "r", None
        self._settings = {"kind": kind, "similarity": similarity}

    def settings(self) -> dict:
        return self._settings


@pytest.mark.parametrize(
    "name,kind,similarity,model_type,scoring",
    [
        ("colbertv2", "multi-vector", "maxsim", "late-interaction", "MaxSim"),
        ("answerai-colbert-small", "multi-vector", "maxsim", "late-interaction", "MaxSim"),
        ("splade-v3", "learned-sparse", "dot", "sparse", "dot"),
    ],
)
def test_model_meta_carries_the_alias_metadata_as_mteb_reads_it(name, kind, similarity, model_type, scoring):
    from mteb.models.model_meta import MODEL_TYPES, ModelMeta

    assert model_type in get_args(MODEL_TYPES)
    spec = alias(name)
    meta = ModelMeta.model_validate(model_meta(_Retriever(name, kind, similarity)))
    assert meta.model_type == [model_type]
    assert meta.similarity_fn_name == scoring
    assert meta.n_parameters == spec.parameters and meta.embed_dim == spec.embedding_dim
    assert meta.max_tokens == spec.max_tokens and meta.license == spec.license
    assert (meta.release_date or "") == spec.release_date
    assert meta.training_datasets == (set(spec.training_data) or None)


def _entry(kind: str, score: float) -> dict:
    return {
        "id": f"m__{kind}",
        "label": "run",
        "model": "org/checkpoint",
        "model_revision": "r1",
        "task": "mtrbench-sample",
        "split": "test",
        "dataset_revision": "d1",
        "main_score": "ndcg_at_10",
        "scores": {"ndcg_at_10": score},
        "settings": {"history": "rewrite", "truncate": "left", "retriever": {"kind": kind, "dtype": "fp32"}},
        "harness": {"name": "mtrbench", "version": "0.1.0"},
        "date": "2026-11-29T00:00:00Z",
        "hardware": None,
        "wall_time_s": 1.0,
        "command": None,
        "source": {"result_file": f"results/{kind}.json"},
    }


def test_one_checkpoint_loaded_as_two_kinds_is_two_leaderboard_systems():
    """The same checkpoint, revision, task and settings, read as a dense model and as a learned sparse one: two
    entries, two systems, two ranks (never one entry, never a duplicate of the other)."""
    dense, sparse = _entry("dense", 0.30), _entry("learned-sparse", 0.40)
    assert identity(dense) != identity(sparse)
    assert system_identity(dense) != system_identity(sparse)
    [group], _ = group_entries([dense, sparse])
    assert len(group["systems"]) == 2
    assert group["ranks"]["mtrbench-sample"] == {"m__learned-sparse": 1, "m__dense": 2}
    assert sorted(name.split("retriever.kind=")[1].rstrip("]") for name in group["systems"]) == [
        "dense",
        "learned-sparse",
    ]


def test_pinned_sparse_and_multi_vector_aliases_are_planned_before_loading():
    """A finished eval of a pinned learned sparse or multi-vector alias is skipped without loading it, as a pinned
    dense model is; DiSCo's unpinned document encoder could change under the same request, so it is not."""
    from mtrbench.pipeline.known_plans import request_key
    from mtrbench.pipeline.plan import EvalConfig
    from mtrbench.retrieve.builder import resolve
    from mtrbench.retrieve.options import RetrieverOptions

    config, options = EvalConfig(), RetrieverOptions()
    assert alias("splade-v3").revision and alias("colbertv2").revision
    assert request_key(resolve("splade-v3"), "mtrbench-sample", config, options) is not None
    assert request_key(resolve("colbertv2"), "mtrbench-sample", config, options) is not None
    assert request_key(resolve("splade-cocondenser-ensembledistil"), "mtrbench-sample", config, options) is None
    disco = replace(alias("disco-topiocqa-mistral"), revision="abc123")  # its query encoder pinned, not the other
    assert request_key(resolve(disco), "mtrbench-sample", config, options) is None
