"""`leaderboard build` reads a result's whole identity: results that differ in a field of it are never ranked together
(truncation of a model object that records no max length, a conversation limit, the relevance level), and every
field of results/settings.py's ResultSettings is declared in leaderboard/keys.py."""

from __future__ import annotations

import json
import shutil
from dataclasses import fields
from pathlib import Path

from mtrbench.cli import main
from mtrbench.leaderboard import schema
from mtrbench.leaderboard.keys import SETTINGS_READ
from mtrbench.results.settings import ResultSettings

RESULT = Path(__file__).resolve().parents[1] / "data" / "results-v0.1"


def result_copy(root: Path, name: str, edit) -> None:
    """The shipped bm25 result as the result of model ``name``, its settings changed by ``edit``."""
    folder = root / name
    shutil.copytree(RESULT, folder)
    path = folder / "mtrbench-sample.json"
    document = json.loads(path.read_text())
    document["mtrbench"]["model"] = {"name": name, "revision": "r1", "requested": name}
    edit(document["mtrbench"]["settings"])
    path.write_text(json.dumps(document))


def build(root: Path, tmp_path: Path) -> dict:
    board = tmp_path / "lb.json"
    assert main(["leaderboard", "build", str(root), "-o", str(board), "--description", "identity test"]) == 0
    return json.loads(board.read_text())


def groups_of(document: dict) -> list[set[str]]:
    models = {e["id"]: e["model"] for e in document["entries"]}
    return [{models[i] for i in group["entries"]} for group in document["groups"]]


def encoder_object(settings: dict) -> None:
    settings["retriever"] = {"kind": "encoder", "object": "wrapped-st", "max_length": None}
    settings["truncate"] = "none"


def dense_left(settings: dict) -> None:
    settings["retriever"] = {"kind": "dense", "max_length": 256, "dtype": "fp32"}
    settings["truncate"] = "left"


def test_every_identity_field_of_a_result_is_read_by_the_leaderboard():
    assert set(SETTINGS_READ) == {f.name for f in fields(ResultSettings)}


def test_an_object_evaluated_untruncated_is_not_ranked_with_left_truncated_runs(tmp_path, capfd):
    root = tmp_path / "results"
    result_copy(root, "object-model", encoder_object)
    result_copy(root, "dense-model", dense_left)
    result_copy(root, "bm25-copy", lambda settings: None)  # no token limit: ranked with both
    document = build(root, tmp_path)
    groups = groups_of(document)
    assert {"object-model", "dense-model"} not in [g & {"object-model", "dense-model"} for g in groups]
    assert sorted(map(sorted, groups)) == [["bm25-copy", "dense-model"], ["bm25-copy", "object-model"]]
    truncations = sorted(g["comparability"]["truncate"] for g in document["groups"])
    assert truncations == ["left", "none"]
    assert any("truncation differs" in s for s in document["separations"])


def test_results_of_a_conversation_limit_build_and_rank_apart(tmp_path):
    root = tmp_path / "results"
    result_copy(root, "limited", lambda settings: settings.update(limit={"conversations": 2}))
    result_copy(root, "whole", lambda settings: settings.pop("limit"))
    document = build(root, tmp_path)
    assert sorted(map(sorted, groups_of(document))) == [["limited"], ["whole"]]
    limited = next(g for g in document["groups"] if "limit" in g["comparability"])
    assert limited["comparability"]["limit"] == {"conversations": 2}
    schema.load(str(tmp_path / "lb.json"))  # valid against leaderboards/schema.json


def test_another_relevance_level_ranks_apart_and_the_default_is_not_written(tmp_path):
    root = tmp_path / "results"
    result_copy(root, "graded", lambda settings: settings.update(relevance_level=2))
    result_copy(root, "default", lambda settings: settings.update(relevance_level=1))
    document = build(root, tmp_path)
    assert sorted(map(sorted, groups_of(document))) == [["default"], ["graded"]]
    levels = [g["comparability"].get("relevance_level") for g in document["groups"]]
    assert sorted(levels, key=str) == [2, None]


def test_results_with_personal_statements_build_and_rank_apart(tmp_path):
    root = tmp_path / "results"
    result_copy(root, "with-gold-ptkb", lambda settings: settings.update(ptkb="gold"))
    result_copy(root, "without-ptkb", lambda settings: None)
    document = build(root, tmp_path)
    assert sorted(map(sorted, groups_of(document))) == [["with-gold-ptkb"], ["without-ptkb"]]
    personal = [g["comparability"].get("ptkb") for g in document["groups"]]
    assert len(personal) == 2 and set(personal) == {"gold", None}
    schema.load(str(tmp_path / "lb.json"))  # valid against leaderboards/schema.json
