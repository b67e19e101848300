"""Leaderboards: schema, grouping/ranks/averages, build from real results, verify, show, plot."""

from __future__ import annotations

import copy
import json
import re
import shlex
from pathlib import Path

import pytest

from mtrbench.cli import main
from mtrbench.infra.errors import MtrbenchError
from mtrbench.leaderboard.build import BuildReport, build_document, competition_ranks, group_entries
from mtrbench.leaderboard.entries import LeaderboardEntry, SourcedEntry, load_leaderboard_entries
from mtrbench.leaderboard.schema import leaderboards_dir, load, validate

ISO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


# ------------------------------------------------------------------ hand-made entries


def run_entry(
    model: str,
    task: str,
    ndcg: float,
    *,
    recall: float = 0.5,
    history: str = "full",
    truncate: str = "left",
    dataset_revision: str = "d1",
    max_length: int | None = 256,
    date: str = "2026-01-01T00:00:00Z",
    entry_id: str | None = None,
) -> dict:
    return {
        "id": entry_id or f"{model}__{task}__{history}__{truncate}__{dataset_revision}",
        "label": "run",
        "model": model,
        "model_revision": "r1",
        "task": task,
        "split": "test",
        "dataset_revision": dataset_revision,
        "main_score": "ndcg_at_10",
        "scores": {"ndcg_at_10": ndcg, "recall_at_10": recall},
        "settings": {
            "history": history,
            "truncate": truncate,
            "max_length": max_length,
            "top_k": 100,
            "query_format": {"user_prefix": "User: "},
            "retriever": {"kind": "dense", "device": "cpu"},
        },
        "harness": {"name": "mtrbench", "version": "0.1.0"},
        "date": date,
        "hardware": {"cpu_count": 2},
        "wall_time_s": 1.5,
        "command": None,
        "source": {"result_file": f"results/{model}/{task}.json"},
    }


def reported_entry(model: str, task: str, ndcg: float, history: str = "full") -> dict:
    return {
        "id": f"paper__{model}__{task}",
        "label": "reported",
        "model": model,
        "model_revision": None,
        "task": task,
        "split": None,
        "dataset_revision": None,
        "main_score": "ndcg_at_10",
        "scores": {"ndcg_at_10": ndcg},
        "settings": {"history": history, "truncate": None},
        "harness": {"name": "paper", "version": None},
        "date": "2025-03",
        "hardware": None,
        "wall_time_s": None,
        "command": None,
        "source": {
            "citation": "Some Paper (Someone et al., 2025)",
            "table": "Table 2",
            "row": model,
            "published_value": str(round(ndcg * 100, 1)),
            "published_scale": "percent",
        },
    }


def leaderboard(entries: list[dict], with_groups: bool = True) -> dict:
    document = {
        "schema_version": 1,
        "name": "hand",
        "description": "hand-made",
        "created": "2026-01-01T00:00:00Z",
        "generator": "test",
        "entries": entries,
    }
    if with_groups:
        document["groups"], document["separations"] = group_entries(entries)
    return document


# ------------------------------------------------------------------ schema


def test_schema_accepts_valid_leaderboards():
    entries = [run_entry("A", "t1", 0.5), run_entry("B", "t1", 0.4), reported_entry("A", "t1", 0.45)]
    validate(leaderboard(entries, with_groups=False))
    validate(leaderboard(entries))  # with groups, ranks, separations


def _mutations():
    def drop_model(d):
        del d["entries"][0]["model"]

    def wrong_type(d):
        d["entries"][0]["wall_time_s"] = "fast"

    def score_string(d):
        d["entries"][0]["scores"]["ndcg_at_10"] = "0.5"

    def percent_scale(d):
        d["entries"][0]["scores"]["ndcg_at_10"] = 45.3

    def duplicate_id(d):
        d["entries"][1]["id"] = d["entries"][0]["id"]

    def main_not_in_scores(d):
        d["entries"][0]["main_score"] = "mrr_at_10"

    def bad_label(d):
        d["entries"][0]["label"] = "published"

    def reported_without_citation(d):
        del d["entries"][2]["source"]["citation"]

    def created_not_iso(d):
        d["created"] = "yesterday"

    def unknown_entry_in_group(d):
        d["groups"][0]["entries"].append("nobody")

    def unknown_top_level_key(d):
        d["extra"] = 1

    return [
        (drop_model, "'model' is a required property"),
        (wrong_type, "entries/0/wall_time_s"),
        (score_string, "entries/0/scores/ndcg_at_10"),
        (percent_scale, "45.3 is greater than the maximum"),
        (duplicate_id, "duplicate id"),
        (main_not_in_scores, "main_score 'mrr_at_10' is not among its scores"),
        (bad_label, "entries/0/label"),
        (reported_without_citation, "'citation' is a required property"),
        (created_not_iso, "created"),
        (unknown_entry_in_group, "unknown entry 'nobody'"),
        (unknown_top_level_key, "'extra' was unexpected"),
    ]


@pytest.mark.parametrize("mutate,needle", _mutations(), ids=lambda v: getattr(v, "__name__", ""))
def test_schema_rejects_invalid_leaderboards(mutate, needle):
    document = leaderboard([run_entry("A", "t1", 0.5), run_entry("B", "t1", 0.4), reported_entry("A", "t1", 0.45)])
    validate(copy.deepcopy(document))
    mutate(document)
    with pytest.raises(MtrbenchError, match="not a valid leaderboard") as info:
        validate(document, "hand.json")
    assert needle in str(info.value) and "hand.json" in str(info.value)


def test_every_shipped_leaderboard_validates():
    paths = [p for p in leaderboards_dir().glob("*.json") if p.name != "schema.json"]
    assert any(p.stem == "sample" for p in paths)
    for path in paths:
        load(str(path))


# ------------------------------------------------------------------ grouping, ranks, averages


def test_ties_share_the_better_rank():
    assert competition_ranks({"a": 0.5, "b": 0.7, "c": 0.5, "d": 0.1}) == {"b": 1, "a": 2, "c": 2, "d": 4}


def test_ranks_and_averages_equal_hand_computation():
    entries = [
        run_entry("A", "t1", 0.5, recall=0.9),
        run_entry("A", "t2", 0.3, recall=0.6),
        run_entry("B", "t1", 0.6, recall=0.8),
        run_entry("B", "t2", 0.1, recall=0.2),
        run_entry("C", "t1", 0.5, recall=0.7),
    ]
    groups, separations = group_entries(entries)
    assert len(groups) == 1
    group = groups[0]
    ids = {(e["model"], e["task"]): e["id"] for e in entries}
    assert group["ranks"]["t1"] == {ids["B", "t1"]: 1, ids["A", "t1"]: 2, ids["C", "t1"]: 2}
    assert group["ranks"]["t2"] == {ids["A", "t2"]: 1, ids["B", "t2"]: 2}
    assert group["average_over"] == ["t1", "t2"]
    assert set(group["averages"]) == {"A", "B"}  # C lacks t2: never averaged
    assert group["averages"]["A"] == pytest.approx({"ndcg_at_10": 0.4, "recall_at_10": 0.75})
    assert group["averages"]["B"] == pytest.approx({"ndcg_at_10": 0.35, "recall_at_10": 0.5})
    assert any(s.startswith("C in g1: not averaged, no result for t2") for s in separations)


def test_incomparable_entries_are_never_ranked_or_averaged_together():
    base = [run_entry(m, t, 0.4 + 0.1 * i) for i, m in enumerate("AB") for t in ("t1", "t2")]
    other_history = [run_entry("A", t, 0.9, history="current") for t in ("t1", "t2")]
    other_truncation = [run_entry("A", t, 0.8, truncate="right") for t in ("t1", "t2")]
    other_revision = [run_entry("C", "t1", 0.7, dataset_revision="d2")]
    entries = base + other_history + other_truncation + other_revision
    groups, separations = group_entries(entries)
    by_id = {e["id"]: e for e in entries}
    assert len(groups) == 4
    for group in groups:
        members = [by_id[i] for i in group["entries"]]
        comp = group["comparability"]
        assert {e["settings"]["history"] for e in members} == {comp["history"]}
        assert {e["settings"]["truncate"] for e in members} == {comp["truncate"]}
        for e in members:
            assert comp["datasets"][e["task"]]["dataset_revision"] == e["dataset_revision"]
        for system in group["systems"].values():
            assert all(by_id[i]["task"] == task for task, i in system["entries"].items())
    main = next(g for g in groups if set(g["entries"]) == {e["id"] for e in base})
    assert set(main["averages"]) == {"A", "B"}
    assert main["averages"]["A"]["ndcg_at_10"] == pytest.approx(0.4)
    revision_group = next(g for g in groups if g["entries"] == [other_revision[0]["id"]])
    assert revision_group["averages"] == {} and revision_group["tasks"] == ["t1"]
    text = "\n".join(separations)
    assert "history strategy differs (full vs current)" in text
    assert "truncation differs (left vs right)" in text
    assert "dataset revision of t1 differs (d1 vs d2)" in text
    assert all(s.endswith("not ranked or averaged together.") for s in separations if " vs " in s)


def test_reported_numbers_stay_apart_from_runs():
    entries = [run_entry("A", "t1", 0.5), reported_entry("A", "t1", 0.45)]
    groups, separations = group_entries(entries)
    assert [g["entries"] for g in groups] == [[entries[0]["id"]], [entries[1]["id"]]]
    assert [g["comparability"]["label"] for g in groups] == ["run", "reported"]
    assert len(separations) == 1 and "label differs (run vs reported)" in separations[0]


def test_a_result_missing_queries_after_rewriter_failures_ranks_apart(tmp_path):
    """A rewrite:llm result whose rewriter failed on 3 queries averages over fewer queries: it is read with the
    count (from the result document), ranked apart from complete runs of the same history, and the separation
    says why; the protocol is named as a reason too."""
    from mtrbench.leaderboard.entries import entry_from_result

    complete = run_entry("A", "t1", 0.5, history="rewrite:llm")
    partial = run_entry("B", "t1", 0.6, history="rewrite:llm")
    partial["settings"]["queries_left_out"] = 3
    official = run_entry("C", "t1", 0.4, history="rewrite:llm")
    official["settings"]["protocol"] = "official:mtrag"
    groups, separations = group_entries([complete, partial, official])
    assert sorted(g["entries"] for g in groups) == sorted([[complete["id"]], [official["id"]], [partial["id"]]])
    text = "\n".join(separations)
    assert "queries left out (rewriter failures) differs (unknown vs 3)" in text
    assert "scoring protocol differs (unknown vs official:mtrag)" in text

    document = {
        "task_name": "t1",
        "dataset_revision": None,
        "mteb_version": "1.12.48",
        "evaluation_time": 1.0,
        "kg_co2_emissions": None,
        "scores": {"test": [{"ndcg_at_10": 0.6, "main_score": 0.6, "hf_subset": "default", "languages": ["eng-Latn"]}]},
        "mtrbench": {
            "version": "0.1.0",
            "model": {"name": "m", "revision": "r", "requested": "m"},
            "settings": {"history": "rewrite:llm", "truncate": "left", "retriever": {}},
            "main_score_key": "ndcg_at_10",
            "queries": {"total": 10, "evaluated": 6, "excluded_without_positives": 1, "excluded_rewriter_failed": 3},
        },
    }
    entry = entry_from_result(tmp_path / "r.json", document)
    assert entry["settings"]["queries_left_out"] == 3
    document["mtrbench"]["queries"].pop("excluded_rewriter_failed")
    assert "queries_left_out" not in entry_from_result(tmp_path / "r.json", document)["settings"]


def test_retriever_without_token_limit_joins_every_truncation():
    bm25 = run_entry("bm25", "t1", 0.3, truncate="none", max_length=None)
    left, right = run_entry("A", "t1", 0.5), run_entry("A", "t1", 0.6, truncate="right")
    groups, _ = group_entries([left, right, bm25])
    assert sorted(sorted(g["entries"]) for g in groups) == sorted(
        [sorted([left["id"], bm25["id"]]), sorted([right["id"], bm25["id"]])]
    )
    left_group = next(g for g in groups if left["id"] in g["entries"])
    assert left_group["ranks"]["t1"] == {left["id"]: 1, bm25["id"]: 2}


def test_duplicates_are_an_error_naming_both_files_or_the_newest_wins():
    old = run_entry("A", "t1", 0.5, date="2026-01-01T00:00:00Z", entry_id="old")
    new = run_entry("A", "t1", 0.52, date="2026-02-01T00:00:00Z", entry_id="new")
    sourced = [
        SourcedEntry(LeaderboardEntry.from_json(old), "runs1/a.json"),
        SourcedEntry(LeaderboardEntry.from_json(new), "runs2/a.json"),
    ]
    with pytest.raises(MtrbenchError, match="runs1/a.json and runs2/a.json"):
        build_document(sourced, name="x", description="")
    report = BuildReport()
    document = build_document(sourced, name="x", description="", keep_newest=True, report=report)
    assert [e["id"] for e in document["entries"]] == ["new"]
    assert len(report.warnings) == 1 and "kept runs2/a.json" in report.warnings[0]
    # The same result reached twice (same scores and date) is kept once, silently.
    again = build_document(
        [
            SourcedEntry(LeaderboardEntry.from_json(old), "a.json"),
            SourcedEntry(LeaderboardEntry.from_json(copy.deepcopy(old)), "b.json"),
        ],
        name="x",
        description="",
    )
    assert len(again["entries"]) == 1


def test_averages_reproduce_the_published_average_columns():
    """MTR-SUITE prints per-dataset scores and their Average; averaging the transcribed per-dataset numbers must give
    the printed averages (to rounding), except the one cell the paper itself gets wrong (noted in reported.json)."""
    path = leaderboards_dir() / "reported.json"
    if not path.is_file():
        pytest.skip("leaderboards/reported.json not present")
    document = build_document(load_leaderboard_entries(path), name="r", description="")
    by_id = {e["id"]: e for e in document["entries"]}
    published = {
        (g["comparability"]["reported_in"][: -len(" (Average column)")], by_id[i]["model"]): by_id[i]
        for g in document["groups"]
        if (g["comparability"]["reported_in"] or "").endswith("(Average column)")
        for i in g["entries"]
    }
    if not published:
        pytest.skip("reported.json has no Average-column entries")
    checked, mismatched = 0, []
    for group in document["groups"]:
        for name, averages in group["averages"].items():
            printed = published.get((group["comparability"]["reported_in"], group["systems"][name]["model"]))
            if printed is None:
                continue
            for metric, value in printed["scores"].items():
                checked += 1
                if abs(averages[metric] - value) > printed_unit(printed, metric) + 1e-9:
                    mismatched.append((group["comparability"]["reported_in"], name, metric))
    assert checked >= 20
    assert mismatched == [
        ("MTR-SUITE (Ruan et al., 2026), Table 11", "gte-Qwen2-7B", "mrr_at_20"),
        ("MTR-SUITE (Ruan et al., 2026), Table 11", "gte-Qwen2-7B", "ndcg_at_20"),
        ("DREAM / BRIDGE (ICLR 2026), Table 20", "ANCE", "ndcg_at_10"),  # mean of its subsets 0.334, printed 0.35
    ]


def printed_unit(entry: dict, metric: str) -> float:
    """One unit of the printed value's last digit on the score scale: the mean of values rounded that way, itself
    rounded, may differ from the exact mean by that much (MTR-SUITE: 2 decimals in percent -> 1e-4; BRIDGE:
    2 decimals of a fraction -> 0.01)."""
    printed = entry["source"]["cells"][metric]["published_value"]
    decimals = len(printed.partition(".")[2])
    return 10.0**-decimals / (100 if entry["source"]["published_scale"] == "percent" else 1)


# ------------------------------------------------------------------ from real result files


@pytest.fixture(scope="session")
def sample_results(sample_cli_results) -> Path:
    """`mtrbench eval` on the embedded sample, MiniLM, history current and full (tests/conftest.py)."""
    return sample_cli_results


@pytest.fixture(scope="session")
def built(sample_results, tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("built") / "minilm.json"
    assert main(["leaderboard", "build", str(sample_results), "-o", str(output), "--description", "test"]) == 0
    return output


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # rich tables unwrapped, so values can be found in the output


@pytest.mark.slow
def test_build_carries_everything_from_the_result_files(sample_results, built, capsys):
    document = json.loads(built.read_text())
    results = sorted(p for p in sample_results.rglob("*.json") if p.name != "model_meta.json")
    assert len(results) == 2 and len(document["entries"]) == 2
    for path in results:
        result = json.loads(path.read_text())
        meta = result["mtrbench"]
        entry = next(e for e in document["entries"] if e["source"]["result_file"] == str(path))
        block = result["scores"]["test"][0]
        assert entry["scores"] == {k: v for k, v in block.items() if k not in ("hf_subset", "languages", "main_score")}
        assert entry["main_score"] == "ndcg_at_10" and entry["scores"]["ndcg_at_10"] == block["main_score"]
        assert (entry["model"], entry["model_revision"]) == (meta["model"]["name"], meta["model"]["revision"])
        assert (entry["task"], entry["split"], entry["dataset_revision"]) == ("mtrbench-sample", "test", "local")
        assert entry["settings"]["history"] == meta["settings"]["history"]
        assert entry["settings"]["truncate"] == "left" and entry["settings"]["max_length"] == 256
        assert entry["harness"] == {"name": "mtrbench", "version": meta["version"]}
        assert ISO_UTC.match(entry["date"]) and entry["date"] == meta["date"]
        assert entry["hardware"] == meta["hardware"]
        assert entry["wall_time_s"] == pytest.approx(sum(meta["timings_s"].values()), abs=1e-3)
        assert entry["command"] == "mtrbench eval --history current,full --device cpu"
    histories = {e["settings"]["history"] for e in document["entries"]}
    assert histories == {"current", "full"} and len(document["groups"]) == 2
    assert len(document["separations"]) == 1
    assert "history strategy differs (current vs full)" in document["separations"][0]


@pytest.mark.slow
def test_verify_ok_then_fail_after_a_score_is_altered(built, tmp_path, capsys):
    capsys.readouterr()
    assert main(["leaderboard", "verify", str(built)]) == 0
    out = capsys.readouterr().out
    assert "2 OK, 0 FAIL, 0 SKIP" in out and "existing result" in out

    document = json.loads(built.read_text())
    entry = next(e for e in document["entries"] if e["settings"]["history"] == "full")
    true_value = entry["scores"]["recall_at_10"]
    entry["scores"]["recall_at_10"] = round(true_value + 0.01, 6)
    altered = tmp_path / "altered.json"
    altered.write_text(json.dumps(document))
    assert main(["leaderboard", "verify", str(altered)]) == 1
    out = capsys.readouterr().out
    assert "1 OK, 1 FAIL" in out
    row = next(line for line in out.splitlines() if "Recall@10" in line)
    assert "FAIL" in row and f"{true_value + 0.01:.6f}" in row and f"{true_value:.6f}" in row
    assert main(["leaderboard", "verify", str(altered), "--tolerance", "0.02"]) == 0
    assert main(["leaderboard", "verify", str(altered), "--only", entry["id"]]) == 1
    assert main(["leaderboard", "verify", str(altered), "--only", "no-such-entry"]) == 2


@pytest.mark.slow
def test_show_renders_each_group(built, capsys):
    document = json.loads(built.read_text())
    capsys.readouterr()
    assert main(["leaderboard", "show", str(built)]) == 0
    out = capsys.readouterr().out
    assert "history=full" in out and "history=current" in out and "all-MiniLM-L6-v2" in out
    for entry in document["entries"]:
        assert f"{entry['scores']['ndcg_at_10']:.4f} (1)" in out
    assert main(["leaderboard", "show", str(built), "--task", "mtrbench-sample", "--metric", "recall_at_20"]) == 0
    out = capsys.readouterr().out
    assert all(f"{e['scores']['recall_at_20']:.4f}" in out for e in document["entries"])
    assert main(["leaderboard", "show", str(built), "--task", "nope"]) == 2


def test_show_groups_a_leaderboard_written_without_groups(tmp_path, capsys):
    path = tmp_path / "hand.json"
    path.write_text(
        json.dumps(
            leaderboard(
                [
                    run_entry("A", "t1", 0.5),
                    run_entry("B", "t1", 0.61),
                    run_entry("A", "t2", 0.2),
                    run_entry("B", "t2", 0.1),
                ],
                with_groups=False,
            )
        )
    )
    capsys.readouterr()
    assert main(["leaderboard", "show", str(path)]) == 0
    out = capsys.readouterr().out
    row_a = next(line for line in out.splitlines() if " A " in line)
    row_b = next(line for line in out.splitlines() if " B " in line)
    assert "0.5000 (2)" in row_a and "0.2000 (1)" in row_a and "0.3500" in row_a  # mean of 0.5 and 0.2
    assert "0.6100 (1)" in row_b and "0.1000 (2)" in row_b and "0.3550" in row_b


@pytest.mark.slow
def test_committed_sample_leaderboard_verifies(sample_results, tmp_path, monkeypatch, capsys):
    """MiniLM entries are compared with this session's run (same command); BM25 entries are re-run."""
    monkeypatch.chdir(tmp_path)  # no results/ folder here: the entries' result_file paths do not exist
    _, document = load("sample")
    assert all(e["command"] and e["command"].startswith("mtrbench eval") for e in document["entries"])
    capsys.readouterr()
    assert main(["leaderboard", "verify", "sample", "--results-dir", str(sample_results)]) == 0
    captured = capsys.readouterr()
    assert f"{len(document['entries'])} OK, 0 FAIL, 0 SKIP" in captured.out
    assert "re-running 1/1: mtrbench eval --model bm25" in captured.err  # progress: stderr


def leaderboard_with_commands(tmp_path: Path, commands: dict[str, str | None], keep: list[dict] = ()) -> Path:
    """The sample leaderboard with ``keep``'s entries plus one entry per (id, command); none has a result file."""
    _, sample = load("sample")
    template = copy.deepcopy(sample["entries"][0])
    template["source"]["result_file"] = str(tmp_path / "never-written.json")
    entries = [copy.deepcopy(e) for e in keep]
    for entry_id, command in commands.items():
        entry = copy.deepcopy(template)
        entry["id"], entry["command"] = entry_id, command
        entries.append(entry)
    path = tmp_path / "hand.json"
    path.write_text(json.dumps({**sample, "entries": entries, "groups": [], "separations": []}))
    return path


def test_verify_skips_what_cannot_run_here_and_refuses_what_is_not_checked(tmp_path, capsys):
    path = leaderboard_with_commands(
        tmp_path,
        {
            "no-command": None,
            "not-mtrbench": "rm -rf /tmp/x",
            "task-folder": "mtrbench eval --model bm25 --task /nonexistent/task-folder",
            "user-error": "mtrbench eval --query-model org/query-tower",
        },
    )  # eval itself refuses: exit 2
    capsys.readouterr()
    assert main(["leaderboard", "verify", str(path)]) == 1  # a refusal is not a pass
    captured = capsys.readouterr()
    out = " ".join(captured.out.split())  # the notes under the table wrap at the terminal's width
    assert "0 OK, 0 FAIL, 2 SKIP, 2 REFUSED" in out
    assert "no command recorded" in out
    for refusal in (
        "not-mtrbench: refused: only `mtrbench eval` commands are re-run",
        "task-folder: refused: --task '/nonexistent/task-folder' is not a registered task name",
    ):
        assert any(refusal in line for line in captured.err.splitlines())  # as it happened, whole
        assert refusal.split(": refused: ")[0] + ": refused: " in out  # and in the notes under the table
    assert "not runnable here: error: --query-model and --doc-model go together" in out


def test_verify_rerun_never_runs_code_or_writes_where_the_file_says(tmp_path, monkeypatch, capsys):
    """A downloaded leaderboard asks for remote code from a local model folder and its own cache/output
    folders: nothing of it runs, nothing is written there, each refusal says why; the safe entries re-run."""
    marker = tmp_path / "model-code-ran.marker"
    evil = tmp_path / "evil-model"
    evil.mkdir()
    payload = f"open({str(marker)!r}, 'w').write('the model folder ran code')\n"
    for name in ("configuration_evil.py", "modeling_evil.py", "__init__.py"):
        (evil / name).write_text(payload + "class EvilConfig: pass\nclass EvilModel: pass\n")
    (evil / "config.json").write_text(
        json.dumps(
            {
                "model_type": "evil",
                "auto_map": {"AutoConfig": "configuration_evil.EvilConfig", "AutoModel": "modeling_evil.EvilModel"},
            }
        )
    )
    their_cache, their_output = tmp_path / "their-cache", tmp_path / "their-output"
    _, sample = load("sample")
    bm25 = [e for e in sample["entries"] if e["model"] == "bm25"]
    path = leaderboard_with_commands(
        tmp_path,
        {
            "evil-everything": f"mtrbench eval --trust-remote-code --model {evil} --cache-dir {their_cache} "
            f"--output-dir {their_output}",
            "evil-abbreviated": f"mtrbench eval --model BAAI/bge-small-en-v1.5 --trust --cache-dir={their_cache}",
            "evil-local-model": f"mtrbench eval --model {evil} --device cpu",
            "evil-cache": f"mtrbench eval --model bm25 --history current,full --cache-dir {their_cache}",
            "evil-output": f"mtrbench eval --model bm25 --history current,full --output-dir={their_output}",
            "evil-value": "mtrbench eval --model bm25 --user-prefix --trust-remote-code",
        },
        keep=bm25,
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mtrbench-sample").mkdir()  # same name as the task: re-runs must not read it as a task folder
    mine, work = tmp_path / "my-cache", tmp_path / "work"
    capsys.readouterr()
    code = main(["leaderboard", "verify", str(path), "--rerun", "--work-dir", str(work), "--cache-dir", str(mine)])
    captured = capsys.readouterr()
    out, err = captured.out, captured.err  # the table on stdout; refusals and re-runs as they happen on stderr
    assert code == 1
    assert "2 OK, 0 FAIL, 0 SKIP, 6 REFUSED" in out
    assert not marker.exists() and not their_cache.exists() and not their_output.exists()
    reasons = {
        "evil-everything": "--trust-remote-code would run code from the model's repository",
        "evil-abbreviated": "--trust-remote-code would run code",
        "evil-local-model": f"--model '{evil}' is neither a registered model alias",
        "evil-cache": "--cache-dir names a folder to write",
        "evil-output": "--output-dir names a folder to write",
        "evil-value": "--user-prefix has no value",
    }
    for entry_id, reason in reasons.items():
        [line] = [line for line in err.splitlines() if line.startswith(f"{entry_id}: refused: ")]
        assert reason in line, line
    # the one safe command, printed before it ran, with the user's cache folder and verify's work folder
    [shown] = [line for line in err.splitlines() if line.startswith("re-running")]
    assert shown == "re-running 1/1: " + shlex.join(
        [
            "mtrbench",
            "eval",
            "--model",
            "bm25",
            "--history",
            "current,full",
            f"--cache-dir={mine.resolve()}",
            f"--output-dir={(work / 'run-1').resolve()}",
            "--quiet",
        ]
    )
    assert [p.name for p in work.iterdir()] == ["run-1"]
    assert (
        sorted(p.name for p in (work / "run-1").rglob("*.json") if p.name != "model_meta.json")
        == ["mtrbench-sample.json"] * 2
    )


@pytest.mark.parametrize(
    "command,expected",
    [
        ("mtrbench eval --model bm25 --history current,full", ["eval", "--model", "bm25", "--history", "current,full"]),
        (
            "mtrbench eval --model BAAI/bge-small-en-v1.5 --revisio refs/pr/1 --k 1,5 --metrics ndcg,hit --top-k 50 --quiet",
            [
                "eval",
                "--model",
                "BAAI/bge-small-en-v1.5",
                "--revision",
                "refs/pr/1",
                "--k",
                "1,5",
                "--metrics",
                "ndcg,hit",
                "--top-k",
                "50",
            ],
        ),
        (
            "mtrbench eval --query-model org/q --doc-model org/d --pooling cls --dtype fp16 --split test",
            [
                "eval",
                "--query-model",
                "org/q",
                "--doc-model",
                "org/d",
                "--pooling",
                "cls",
                "--dtype",
                "fp16",
                "--split",
                "test",
            ],
        ),
        (
            "mtrbench eval --user-prefix=--trust-remote-code --separator '\\n\\n' --history window:3",
            ["eval", "--user-prefix=--trust-remote-code", "--separator", "\\n\\n", "--history", "window:3"],
        ),
    ],
)
def test_screened_commands_are_rebuilt_from_checked_options(command, expected):
    from mtrbench.cli import build_parser
    from mtrbench.cli.screen import screen_command
    from mtrbench.leaderboard.verify import LocalOptions, rerun_arguments

    screened = screen_command(command)
    assert screened.arguments == expected and not screened.refused
    parsed = build_parser().parse_args(rerun_arguments(screened.arguments, LocalOptions(), Path("/tmp/verify-out")))
    assert parsed.trust_remote_code is False and parsed.output_dir == "/tmp/verify-out"
    assert (parsed.cache_dir, parsed.data_dir, parsed.corpus, parsed.refined_qrels) == (None, None, None, None)


@pytest.mark.parametrize(
    "command,reason",
    [
        ("mtrbench eval --model ./folder", "local folders are never re-run"),
        ("mtrbench eval --model ~/models/x", "local folders are never re-run"),
        ("mtrbench eval --model ../org/name", "local folders are never re-run"),
        ("mtrbench eval --model 'org/a|./b'", "local folders are never re-run"),
        ("mtrbench eval --query-model /abs/q --doc-model org/d", "local folders are never re-run"),
        ("mtrbench eval --task tasks/custom.yaml", "is not a registered task name"),
        ("mtrbench eval --data-dir /data", "--data-dir names a local folder"),
        ("mtrbench eval --corpus c.jsonl", "--corpus names a local file"),
        ("mtrbench eval --refined-qrels q.trec", "--refined-qrels names a local file"),
        ("mtrbench eval --trust-remote-code", "--trust-remote-code would run code"),
        ("mtrbench eval --model bm25 --trus", "--trust-remote-code would run code"),  # argparse would take the prefix
        ("mtrbench eval --history current,bogus", "names 'bogus', not a history strategy"),
        ("mtrbench eval --k 1,x", "is not a comma list of positive integers"),
        ("mtrbench eval --metrics ndcg,evil", "names an unknown metric"),
        ("mtrbench eval --top-k 0", "must be positive"),
        ("mtrbench eval --truncate middle", "is not one of left, right, none"),
        ("mtrbench eval --device 'cuda; rm -rf /'", "is not auto, cpu, mps, cuda or cuda:N"),
        ("mtrbench eval --split ../../etc", "is not a split name"),
        ("mtrbench eval --split dev", "has no such split"),
        ("mtrbench eval --no-cache=1", "takes no value"),
        ("mtrbench eval --help", "is not among the settings verify re-runs"),
        ("mtrbench eval --m bm25", "is ambiguous"),
        ("mtrbench eval --model bm25 positional", "unexpected argument 'positional'"),
        ("mtrbench eval --model 'unclosed", "cannot be parsed"),
        ("python -m mtrbench.cli eval", "only `mtrbench eval` commands are re-run"),
        ("mtrbench score --run r --qrels q", "only `mtrbench eval` commands are re-run"),
    ],
)
def test_screen_refuses_paths_code_and_unchecked_values(command, reason):
    from mtrbench.cli.screen import screen_command

    screened = screen_command(command)
    assert screened.arguments is None and screened.refused
    assert screened.reason.startswith("refused: ") and reason in screened.reason and "\n" not in screened.reason


@pytest.mark.slow
def test_build_merges_reported_entries_and_refuses_bad_inputs(built, tmp_path):
    reported = tmp_path / "reported.json"
    reported.write_text(
        json.dumps(
            leaderboard(
                [reported_entry("sentence-transformers/all-MiniLM-L6-v2", "mtrbench-sample", 0.5)], with_groups=False
            )
        )
    )
    output = tmp_path / "merged.json"
    assert main(["leaderboard", "build", str(built), str(reported), "-o", str(output)]) == 0
    document = json.loads(output.read_text())
    assert [e["label"] for e in document["entries"]] == ["run", "run", "reported"]
    assert any("label differs (run vs reported)" in s for s in document["separations"])
    by_name = tmp_path / "by-name.json"  # a bare NAME is a shipped leaderboard
    assert main(["leaderboard", "build", str(built), "sample", "-o", str(by_name), "--keep-newest"]) == 0
    assert {e["id"] for e in json.loads(by_name.read_text())["entries"]} >= {
        e["id"] for e in load("sample")[1]["entries"] if e["model"] == "bm25"
    }
    not_a_result = tmp_path / "other.json"
    not_a_result.write_text("{}")
    assert main(["leaderboard", "build", str(not_a_result), "-o", str(tmp_path / "x.json")]) == 2
    assert main(["leaderboard", "build", str(tmp_path / "missing"), "-o", str(tmp_path / "x.json")]) == 2
    assert not (tmp_path / "x.json").exists()


@pytest.mark.slow
def test_plot_writes_valid_pngs(sample_results, built, tmp_path):
    from PIL import Image

    out = tmp_path / "plots"
    assert main(["plot", str(sample_results), "-o", str(out), "--leaderboard", str(built)]) == 0
    pngs = sorted(p.name for p in out.glob("*.png"))
    # one figure per table of the page (the two history strategies share one), named after what it shows
    assert pngs == [
        "minilm__mtrbench-runs-mtrbench-sample-by-history-strategy.png",
        "mtrbench-sample__all-MiniLM-L6-v2__turns_at_10.png",
    ]
    for name in pngs:
        with Image.open(out / name) as image:
            image.verify()
        with Image.open(out / name) as image:
            assert image.format == "PNG" and image.width >= 600 and image.height >= 300
            low, high = image.convert("L").getextrema()
            assert high - low > 100  # something was drawn
    assert main(["plot", "-o", str(out)]) == 2


@pytest.mark.parametrize(
    "command, accepted",
    [
        (
            "mtrbench eval --model hybrid:minilm+bm25 --alpha 0.5,0.7 --candidate-k 30 --chunking sentences:3:2 "
            "--rank-parents",
            True,
        ),
        ("mtrbench eval --model bm25 --rerank cross-encoder/ms-marco-MiniLM-L6-v2 --rerank-k 50", True),
        ("mtrbench eval --model hybrid:./folder+bm25", False),
        ("mtrbench eval --model bm25 --rerank ./local-cross-encoder", False),
        ("mtrbench eval --model hybrid:minilm+bm25 --alpha 1.5", False),
        ("mtrbench eval --model bm25 --chunking tokens:128", False),
    ],
)
def test_screen_pipeline_options(command, accepted):
    from mtrbench.cli.screen import screen_command

    screened = screen_command(command)
    assert (screened.arguments is not None) is accepted, screened.reason
    assert screened.refused is (not accepted)
