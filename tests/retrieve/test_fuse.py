"""`mtrbench fuse`: the fused run is ranx's fusion of the same runs; RRF checked by hand too."""

from __future__ import annotations

import json

import pytest

from mtrbench.cli import main
from mtrbench.formats.run import format_run, read_run
from mtrbench.infra.errors import MtrbenchError
from mtrbench.retrieve.fusion import FusionOptions, fuse_runs

pytest.importorskip("ranx")

RUN_A = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"d1": 0.9, "d4": 0.5}}
RUN_B = {"q1": {"d3": 9.0, "d1": 4.0}, "q2": {"d4": 2.0, "d2": 1.5, "d1": 1.0}, "q3": {"d2": 1.0}}


def _ranx_fuse(runs, **kwargs):
    from ranx import Run, fuse

    return fuse([Run(r, name=f"r{i}") for i, r in enumerate(runs)], **kwargs).to_dict()


def _close(a, b):
    assert set(a) == set(b)
    for q in a:
        assert set(a[q]) == set(b[q]), q
        for d in a[q]:
            assert a[q][d] == pytest.approx(b[q][d], abs=1e-12), (q, d)


def test_rrf_by_hand_two_runs_three_docs():
    a = {"q": {"x": 3.0, "y": 2.0, "z": 1.0}}  # ranks x1 y2 z3
    b = {"q": {"z": 0.9, "x": 0.5}}  # ranks z1 x2
    fused = fuse_runs([a, b], FusionOptions(method="rrf", rrf_k=60))["q"]
    assert fused["x"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["z"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["y"] == pytest.approx(1 / 62)
    assert sorted(fused, key=fused.get, reverse=True) == ["x", "z", "y"]


def test_fixture_equals_ranx_on_queries_both_runs_list():
    # ranx itself needs equal query sets: compare on the shared queries, then check the rest separately.
    shared_a = {q: RUN_A[q] for q in ("q1", "q2")}
    shared_b = {q: RUN_B[q] for q in ("q1", "q2")}
    ours = fuse_runs([RUN_A, RUN_B], FusionOptions(method="rrf"))
    _close({q: ours[q] for q in ("q1", "q2")}, _ranx_fuse([shared_a, shared_b], method="rrf", norm=None))
    assert ours["q3"] == pytest.approx({"d2": 1 / 61})  # only run B lists q3: its RRF term alone
    ours = fuse_runs([RUN_A, RUN_B], FusionOptions(method="wsum", weights=(0.3, 0.7)))
    _close(
        {q: ours[q] for q in ("q1", "q2")},
        _ranx_fuse([shared_a, shared_b], method="wsum", norm="min-max", params={"weights": [0.3, 0.7]}),
    )
    # min-max by hand on q1: A -> d1 1, d2 .5, d3 0; B -> d3 1, d1 0
    assert ours["q1"] == pytest.approx({"d1": 0.3, "d2": 0.15, "d3": 0.7})


@pytest.mark.parametrize("norm", ["min-max", "max", "sum", "zmuv", "rank", "borda"])
def test_every_normalization_is_ranx(norm):
    shared_a = {q: RUN_A[q] for q in ("q1", "q2")}
    shared_b = {q: RUN_B[q] for q in ("q1", "q2")}
    ours = fuse_runs([shared_a, shared_b], FusionOptions(method="combmnz", norm=norm))
    _close(ours, _ranx_fuse([shared_a, shared_b], method="mnz", norm=norm))


@pytest.mark.parametrize(
    "options,needle",
    [
        (FusionOptions(method="rrf", weights=(1.0, 2.0)), "wsum only"),
        (FusionOptions(method="wsum", weights=(1.0,)), "1 weight(s) for 2 runs"),
        (FusionOptions(method="borda"), "--method"),
        (FusionOptions(norm="l2"), "--norm"),
    ],
)
def test_bad_options_are_user_errors(options, needle):
    with pytest.raises(MtrbenchError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        fuse_runs([RUN_A, RUN_B], options)


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory):
    """BM25 and MiniLM runs of the sample task, made by `mtrbench eval` as a user would."""
    out = tmp_path_factory.mktemp("results")
    results = {}
    for model in ("bm25", "minilm"):
        assert (
            main(
                [
                    "eval",
                    "--model",
                    model,
                    "--history",
                    "current",
                    "--device",
                    "cpu",
                    "--quiet",
                    "--output-dir",
                    str(out),
                ]
            )
            == 0
        )
        results[model] = next(
            p
            for p in out.rglob("mtrbench-sample.json")
            if model in str(p).lower() or (model == "minilm" and "MiniLM" in str(p))
        )
    return results


@pytest.mark.slow
def test_real_runs_fused_by_the_command_equal_ranx(real_runs, tmp_path):
    from mtrbench.retrieve.fusion import run_file_for

    bm25, dense = (read_run(run_file_for(real_runs[m])) for m in ("bm25", "minilm"))
    assert set(bm25) == set(dense)  # every sample query gets documents from both
    for method, args, ranx_kwargs in (
        ("rrf", [], {"method": "rrf", "norm": None}),
        ("wsum", ["--weights", "0.3,0.7"], {"method": "wsum", "norm": "min-max", "params": {"weights": [0.3, 0.7]}}),
    ):
        out = tmp_path / f"{method}.trec"
        # result JSONs in, their .run.trec files are read
        assert (
            main(["fuse", str(real_runs["bm25"]), str(real_runs["minilm"]), "--method", method, *args, "-o", str(out)])
            == 0
        )
        written = read_run(out)
        expected = _ranx_fuse([bm25, dense], **ranx_kwargs)
        # the file keeps 9 significant digits
        assert set(written) == set(expected)
        for q in expected:
            assert set(written[q]) == set(expected[q])
            for d, s in expected[q].items():
                assert written[q][d] == pytest.approx(s, rel=1e-8)
        assert out.read_text() == format_run(
            fuse_runs([bm25, dense], FusionOptions(method=method, weights=(0.3, 0.7) if method == "wsum" else None)),
            f"mtrbench-fuse-{method}",
        )
        settings = json.loads((tmp_path / f"{method}.trec.fusion.json").read_text())
        assert settings["method"] == method and len(settings["inputs"]) == 2
    # the fused run scores like any other
    from mtrbench.data import load_task
    from mtrbench.formats.qrels import format_qrels

    qrels_path = tmp_path / "qrels.trec"
    qrels_path.write_text(format_qrels(load_task("mtrbench-sample").qrels()))
    assert (
        main(
            [
                "score",
                "--run",
                str(tmp_path / "rrf.trec"),
                "--qrels",
                str(qrels_path),
                "--metrics",
                "nDCG@10",
                "--output",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )
    fused_ndcg = json.loads((tmp_path / "s.json").read_text())["scores"]["ndcg_at_10"]
    singles = [json.loads(real_runs[m].read_text())["scores"]["test"][0]["ndcg_at_10"] for m in ("bm25", "minilm")]
    print(f"nDCG@10 bm25 {singles[0]:.4f} minilm {singles[1]:.4f} rrf {fused_ndcg:.4f}")
    assert 0 < fused_ndcg <= 1


def test_cli_error_is_one_line(tmp_path, capsys):
    run = tmp_path / "a.trec"
    run.write_text(format_run(RUN_A, "t"))
    assert main(["fuse", str(run), "--method", "rrf", "-o", str(tmp_path / "o.trec")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1
    assert main(["fuse", str(run), str(tmp_path / "missing.json"), "-o", str(tmp_path / "o.trec")]) == 2
