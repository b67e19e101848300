"""Fusion of several runs into one (``mtrbench fuse``), computed by ranx (``ranx.fuse``).

mtrbench only adapts its runs to ranx and back: every query of any input run is fused (a run that
does not list a query contributes nothing to it), and the result is an ordinary run, written in
trec_eval order and scored like any other.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from mtrbench.formats.run import Run, ranked, read_run
from mtrbench.infra.errors import MtrbenchError
from mtrbench.results.result import Result

# mtrbench's name -> ranx's method name.
METHODS = {"rrf": "rrf", "wsum": "wsum", "combmnz": "mnz"}
# ranx's score normalizations, applied to each run and query before fusing; "none" passes scores as they are.
NORMALIZATIONS = ("min-max", "max", "sum", "zmuv", "rank", "borda", "none")
# RRF fuses ranks, so normalizing first changes nothing but ties; the score-based methods need comparable scales.
DEFAULT_NORM = {"rrf": "none", "wsum": "min-max", "combmnz": "min-max"}


@dataclass(frozen=True)
class FusionOptions:
    method: str = "rrf"  # rrf | wsum | combmnz
    weights: tuple[float, ...] | None = None  # wsum only, one per run; None: equal weights 1/n
    norm: str | None = None  # one of NORMALIZATIONS; None: the method's default (DEFAULT_NORM)
    rrf_k: int = 60  # RRF's k: score = sum over runs of 1 / (k + rank), ranks from 1
    top_k: int | None = None  # keep this many documents per query; None: every fused document

    @property
    def normalization(self) -> str:
        return self.norm or DEFAULT_NORM[self.method]

    def check(self, n_runs: int) -> None:
        if self.method not in METHODS:
            raise MtrbenchError(f"--method must be one of {', '.join(METHODS)}, got '{self.method}'")
        if self.normalization not in NORMALIZATIONS:
            raise MtrbenchError(f"--norm must be one of {', '.join(NORMALIZATIONS)}, got '{self.norm}'")
        if n_runs < 2:
            raise MtrbenchError(f"fusion needs at least two runs, got {n_runs}")
        if self.weights is not None:
            if self.method != "wsum":
                raise MtrbenchError(f"--weights apply to --method wsum only, not {self.method}")
            if len(self.weights) != n_runs:
                raise MtrbenchError(f"--weights gives {len(self.weights)} weight(s) for {n_runs} runs")
        if self.rrf_k < 0:
            raise MtrbenchError(f"--rrf-k must be >= 0, got {self.rrf_k}")
        if self.top_k is not None and self.top_k < 1:
            raise MtrbenchError("--top-k must be positive")

    def settings(self, n_runs: int) -> dict:
        """What changes the fused scores, as recorded beside the run."""
        out: dict = {"method": self.method, "ranx_method": METHODS[self.method], "norm": self.normalization}
        if self.method == "rrf":
            out["rrf_k"] = self.rrf_k
        if self.method == "wsum":
            out["weights"] = list(self.weights or [1.0 / n_runs] * n_runs)
        out["top_k"] = self.top_k
        return out


def run_file_for(path: str | Path) -> Path:
    """A TREC run file as given, or the run beside an mtrbench result JSON (``<task>.run.trec``)."""
    path = Path(path)
    if path.suffix != ".json":
        return path
    if not path.is_file():
        raise MtrbenchError(f"{path}: no such result file")
    result = Result.load(path)
    # a result that records no run file: the eval layout's name, <task>.run.trec beside it
    run = result.run_path if "run" in result.files else path.with_name(path.name[: -len(".json")] + ".run.trec")
    if not run.exists():
        raise MtrbenchError(f"{path}: its TREC run {run.name} is not beside it")
    return run


def _to_ranx(run: Run, qids: list[str], name: str):
    """A ranx Run over ``qids``; queries the run lacks are empty (ranx requires equal query sets)."""
    from numba import types
    from numba.typed import Dict
    from ranx import Run as RanxRun
    from ranx.data_structures.common import sort_dict_by_key

    listed = {q: docs for q, docs in run.items() if docs}
    out = RanxRun(listed, name=name) if listed else RanxRun(name=name)
    missing = [q for q in qids if q not in listed]
    if missing:
        for q in missing:
            out.run[q] = Dict.empty(key_type=types.unicode_type, value_type=types.float64)
        out.run = sort_dict_by_key(out.run)
    return out


def fuse_runs(runs: list[Run], options: FusionOptions) -> Run:
    """The fused run: ``ranx.fuse`` with the options' method, normalization and parameters."""
    options.check(len(runs))
    try:
        from ranx import fuse
    except ImportError:
        raise MtrbenchError("fusion needs ranx: pip install 'mtrbench[fusion]' (or pip install ranx)") from None

    qids = sorted(set().union(*runs))
    if not qids:
        raise MtrbenchError("the runs to fuse list no query")
    ranx_runs = [_to_ranx(run, qids, f"run{i}") for i, run in enumerate(runs)]
    params: dict = {}
    if options.method == "rrf":
        params["k"] = options.rrf_k
    elif options.method == "wsum":
        params["weights"] = list(options.weights or [1.0 / len(runs)] * len(runs))
    norm = None if options.normalization == "none" else options.normalization
    with warnings.catch_warnings():
        # numba's note on ranx's own index casts (uint64 -> int64), harmless at any run size
        # (numba may wrap the text in ANSI bold codes, so the filter allows them before it)
        warnings.filterwarnings("ignore", message=r"(\x1b\[[0-9;]*m)*unsafe cast from uint64 to int64")
        fused = fuse(ranx_runs, norm=norm, method=METHODS[options.method], params=params).to_dict()
    out: Run = {}
    for qid in qids:
        docs = {str(d): float(s) for d, s in fused.get(qid, {}).items()}
        if options.top_k is not None:
            docs = dict(ranked(docs)[: options.top_k])
        out[qid] = docs
    return out


def fuse_files(paths: list[str | Path], options: FusionOptions) -> tuple[Run, list[Path]]:
    """Fuse TREC run files (or result JSONs, through their runs): the fused run and the files read."""
    files = [run_file_for(p) for p in paths]
    options.check(len(files))
    return fuse_runs([read_run(f) for f in files], options), files
