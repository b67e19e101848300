"""leaderboards/reported.json: published numbers, checked cell by cell against the papers' text
(../shared/seeds; the tests skip with a counted reason where it is absent).

The readers below locate a cell in the seed text by its layout (row label + column header position), so a
transcription error, a value moved to the wrong row/column or a missing cell makes a test fail.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPORTED = ROOT / "leaderboards" / "reported.json"
SCHEMA = ROOT / "leaderboards" / "schema.json"

MTR = "shared/seeds/mtr-suite.txt"
CORAL = "shared/seeds/coral.txt"
MTRAG = "shared/datasets/real/mtrag/retrieval_tasks/README.upstream.md"
HRAG = "shared/seeds/h-rag-mtrageval.txt"
RAD = "shared/seeds/rad-bench.txt"
RECOR = "shared/datasets/real/recor/abstract.txt"  # ships with the tests (CC BY 4.0 abstract)
DREAM = "shared/seeds/dream-bridge.txt"

CONTRACT_ENTRY_FIELDS = {
    "id",
    "label",
    "model",
    "model_revision",
    "task",
    "split",
    "dataset_revision",
    "main_score",
    "scores",
    "settings",
    "harness",
    "date",
    "hardware",
    "wall_time_s",
    "command",
    "source",
}
CONTRACT_SOURCE_FIELDS = {"citation", "table", "row", "column", "published_value", "published_scale", "file"}
NUMBER = re.compile(r"\d*\.?\d+")  # RECOR's abstract prints ".236"


@pytest.fixture(scope="module")
def reported() -> dict:
    return json.loads(REPORTED.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def entries(reported) -> list[dict]:
    return reported["entries"]


@pytest.fixture(scope="module")
def seeds(seed_papers, shared) -> dict[str, str]:
    # source.file is written relative to the folder holding shared/; the papers and the data may live apart
    def path(rel: str) -> Path:
        return (
            seed_papers / rel.removeprefix("shared/seeds/")
            if rel.startswith("shared/seeds/")
            else shared / rel.removeprefix("shared/")
        )

    return {rel: path(rel).read_text(encoding="utf-8") for rel in (MTR, CORAL, MTRAG, HRAG, RAD, RECOR, DREAM)}


# ----------------------------------------------------------------------------------------------- seed readers


def _block_before(text: str, caption: str) -> list[str]:
    """Lines between the previous 'Table N:' caption and ``caption`` (the table sits above its caption)."""
    end = text.index("\n" + caption)
    starts = [m.end() for m in re.finditer(r"\nTable \d+:[^\n]*", text[:end])]
    return text[starts[-1] if starts else 0 : end].splitlines()


def _only_row(lines: list[list[str]], label: str, label_col: int = 0) -> list[str]:
    found = [cells for cells in lines if len(cells) > label_col and cells[label_col].strip() == label]
    assert len(found) == 1, f"row {label!r}: {len(found)} matching lines"
    return found[0]


def mtr_grouped_cell(text: str, caption: str, row: str, column: str) -> str:
    """Tables 3 and 11: a dataset header line spanning two metric columns each, then rows 'model<TAB>12 values'."""
    lines = [line.split("\t") for line in _block_before(text, caption)]
    dataset_lines = [cells for cells in lines if cells[0] == "" and len(cells) > 1 and cells[1] == "QReCC"]
    metric_lines = [cells for cells in lines if cells[0] == "" and len(cells) > 1 and "@" in cells[1]]
    assert dataset_lines and all(d == dataset_lines[0] for d in dataset_lines), "header lines differ"
    assert metric_lines and all(m == metric_lines[0] for m in metric_lines)
    datasets, metrics = dataset_lines[0], metric_lines[0]
    columns = [f"{datasets[1 + 2 * (j // 2)]} {metrics[1 + j]}" for j in range(len(metrics) - 1)]
    cells = _only_row(lines, row)
    values = cells[1:]
    assert len(values) == len(columns) == 12
    return values[columns.index(column)]


def mtr_grouped_cells(text: str, caption: str) -> set[tuple[str, str]]:
    lines = [line.split("\t") for line in _block_before(text, caption)]
    rows = [cells[0] for cells in lines if len(cells) == 13 and cells[0] and NUMBER.fullmatch(cells[1])]
    datasets = ["QReCC", "QuAC", "Doc2Dial", "TopiOCQA", "MTR-BENCH", "Average"]
    metrics = ("R@5", "R@20") if caption.startswith("Table 3") else ("M@20", "N@20")
    return {(r, f"{d} {m}") for r in rows for d in datasets for m in metrics}


def simple_tab_cell(text: str, caption: str, header_first: str, row: str, column: str, label_col: int = 0) -> str:
    """A header line starting with ``header_first``, rows with the label in ``label_col``."""
    lines = [line.split("\t") for line in _block_before(text, caption)]
    header = _only_row(lines, header_first)
    cells = _only_row(lines, row, label_col)
    assert len(cells) == len(header), f"row {row!r} has {len(cells)} cells, header {len(header)}"
    return cells[header.index(column)]


def mtrag_cell(text: str, row: str, column: str) -> str:
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in text.split("## Results", 1)[1].splitlines()
        if "|" in line
    ]
    header = rows[0]
    retriever, setup = (part.strip() for part in row.split("|"))
    found = [cells for cells in rows if cells[:2] == [retriever, setup]]
    assert len(found) == 1, row
    assert len(found[0]) == len(header)
    return found[0][header.index(column)]


def hrag_ablation_cell(text: str, row: str, column: str) -> str:
    alpha, rank_parents, k = re.fullmatch(r"α=(\S+), rank_parents=(\S+), k=(\d+)", row).groups()
    lines = [line.split("\t") for line in _block_before(text, "Table 2: Configuration ablation")]
    header = _only_row(lines, "α")
    found = [cells for cells in lines if cells[:3] == [alpha, rank_parents, k]]
    assert len(found) == 1, row
    return found[0][header.index(column)]


# Section 5.1 of H-RAG states Task A results in prose; each (row, column) has its own sentence pattern.
HRAG_TEXT_PATTERNS = {
    ("H-RAG (final submission dataset)", "nDCG@5"): (r"nDCG@5 score of (\S+) on the final submission dataset", 1),
    ("H-RAG (baseline dataset)", "nDCG@5"): (
        r"achieves an nDCG@5 score of (\S+) and Recall@5 of (\S+) on the "
        r"baseline dataset",
        1,
    ),
    ("H-RAG (baseline dataset)", "Recall@5"): (
        r"achieves an nDCG@5 score of (\S+) and Recall@5 of (\S+) on the "
        r"baseline dataset",
        2,
    ),
    ("baseline model", "nDCG@5"): (
        r"baseline model reports an nDCG@5 score of (\S+) and Recall@5 of ([\d.]+?)\.?\s",
        1,
    ),
    ("baseline model", "Recall@5"): (
        r"baseline model reports an nDCG@5 score of (\S+) and Recall@5 of ([\d.]+?)\.?\s",
        2,
    ),
}


def hrag_text_cell(text: str, row: str, column: str) -> str:
    section = text.split("5.1 Task A: Retrieval Performance", 1)[1].split("5.2 Task C", 1)[0]
    pattern, group = HRAG_TEXT_PATTERNS[(row, column)]
    matches = re.findall(pattern, section)
    assert len(matches) == 1, (row, column)
    return matches[0][group - 1] if isinstance(matches[0], tuple) else matches[0]


def rad_cell(text: str, row: str, column: str) -> str:
    """RAD-Bench Table 2 is extracted one cell per line: name, params, context length, 6 scenarios, average."""
    lines = [line.strip() for line in _block_before(text, "Table 2: Evaluated models in RAD-Bench")]
    start = max(i for i, line in enumerate(lines) if line == "Model")
    header_end = lines.index("Length", start)
    columns = lines[header_end + 1 : lines.index("Close", header_end)]
    assert columns == ["Academic", "News", "Education", "Finance", "Customer", "Travel", "Average"]
    at = [i for i, line in enumerate(lines) if i > header_end and line == row]
    assert len(at) == 1, row
    values = lines[at[0] + 3 : at[0] + 3 + len(columns)]
    assert all(NUMBER.fullmatch(v) for v in values), (row, values)
    return values[columns.index(column)]


def recor_abstract_cell(text: str, row: str, column: str) -> str:
    """The abstract's one comparison, "(Baseline X $\\rightarrow$ History+Reasoning Y nDCG@10)"."""
    found = re.findall(r"\(Baseline (\S+) \$\\rightarrow\$ History\+Reasoning (\S+) (nDCG@10)\)", text)
    assert len(found) == 1 and column == found[0][2]
    return {"Baseline": found[0][0], "History+Reasoning": found[0][1]}[row]


BRIDGE_COLUMNS = ("MS", "NQ", "Life", "Rec", "Sci", "Tech", "Writ", "Avg.")
BRIDGE_TASKS = {
    "MS": "bridge-msmarco",
    "NQ": "bridge-nq",
    "Life": "bridge-lifestyle",
    "Rec": "bridge-recreation",
    "Sci": "bridge-science",
    "Tech": "bridge-technology",
    "Writ": "bridge-writing",
}


def bridge_rows(text: str, caption: str) -> dict[str, list[str]]:
    """DREAM / BRIDGE Tables 19 and 20 (below their captions): system -> the 16 printed numbers of its row
    (value, change over the original qrels) per column. Rows of the Rerank and Rewrite sections are named
    'FIRST STAGE + METHOD' ('BM25 + TBERT'); the first stage is printed only on a section's first row."""
    rows: dict[str, list[str]] = {}
    first = ""
    for line in text[text.index("\n" + caption) :].splitlines()[1:]:
        if line.startswith("Avg."):
            break
        numbers = re.findall(r"-?\d*\.\d+", line)
        if len(numbers) != 2 * len(BRIDGE_COLUMNS):
            continue
        labels = []
        for cell in line.split("\t"):
            if re.search(r"\d\.\d", cell):
                break
            labels.append(cell.strip())
        if len(labels) == 2:
            rows[labels[1]] = numbers
        else:
            first = labels[1] or first
            rows[f"{first} + {labels[2]}"] = numbers
    return rows


def bridge_cell(text: str, table: str, row: str, column: str) -> str:
    dataset, _ = column.split(" ")
    return bridge_rows(text, table + ":")[row][2 * BRIDGE_COLUMNS.index(dataset)]


def base_table(table: str) -> str:
    """'Table 3 (Average column)' -> 'Table 3'; H-RAG's Section 5.1 entries -> 'Section 5.1'."""
    if table.startswith("Section 5.1"):
        return "Section 5.1"
    return table.split(" (")[0]


def seed_value(seeds: dict[str, str], file: str, table: str, row: str, column: str) -> str:
    """The printed value at (row, column) of ``table``, read from the seed text by its layout."""
    text, table = seeds[file], base_table(table)
    if file == MTR and table in ("Table 3", "Table 11"):
        return mtr_grouped_cell(text, table + ":", row, column)
    if file == MTR and table == "Table 5":
        return simple_tab_cell(text, "Table 5:", "Model", row, column)
    if file == CORAL and table == "Table 2":
        return simple_tab_cell(text, "Table 2:", "Category", row, column, label_col=1)
    if file == MTRAG:
        return mtrag_cell(text, row, column)
    if file == HRAG and table == "Table 2":
        return hrag_ablation_cell(text, row, column)
    if file == HRAG and table == "Section 5.1":
        return hrag_text_cell(text, row, column)
    if file == RAD and table == "Table 2":
        return rad_cell(text, row, column)
    if file == RECOR and table == "Abstract":
        return recor_abstract_cell(text, row, column)
    if file == DREAM and table in ("Table 19", "Table 20"):
        return bridge_cell(text, table, row, column)
    raise AssertionError(f"no reader for {file} {table}")


def published_cells(entries: list[dict]):
    """(entry, score key, file, base table, row, column, printed value) for every transcribed cell."""
    for e in entries:
        s = e["source"]
        for key, cell in s["cells"].items():
            yield e, key, s["file"], base_table(s["table"]), s["row"], cell["column"], cell["published_value"]


# ------------------------------------------------------------------------------------------------ the tests


def test_schema_validation(reported):
    """Valid against leaderboards/schema.json, through mtrbench's validator when it is importable."""
    assert SCHEMA.is_file(), "leaderboards/schema.json is missing"
    try:
        from mtrbench.leaderboard.schema import validate
    except ImportError:
        import jsonschema

        schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
        jsonschema.validators.validator_for(schema)(schema).validate(reported)
    else:
        validate(reported, str(REPORTED))


def test_contract_fields(reported, entries):
    assert reported["schema_version"] == 1 and reported["name"] == "reported"
    assert reported["generator"] == "transcribed by hand" and reported["description"]
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), "duplicate entry ids"
    for e in entries:
        assert CONTRACT_ENTRY_FIELDS <= set(e), e["id"]
        assert e["label"] == "reported"
        assert e["harness"] == {"name": "paper", "version": None}
        s = e["source"]
        assert CONTRACT_SOURCE_FIELDS <= set(s), e["id"]
        assert set(s["cells"]) == set(e["scores"]), e["id"]  # every score has its printed cell
        assert s["cells"][e["main_score"]] == {"column": s["column"], "published_value": s["published_value"]}
        assert e["date"] is None or re.fullmatch(r"\d{4}-\d{2}", e["date"])


def test_every_value_parses_and_scales(entries):
    for e, key, _, _, _, _, printed in published_cells(entries):
        scale = e["source"]["published_scale"]
        assert NUMBER.fullmatch(printed), (e["id"], printed)
        value = e["scores"][key]
        if scale == "percent":
            assert round(value, 10) == round(float(printed) / 100, 10), (e["id"], key)
            assert repr(value) == str(Decimal(printed) / 100).rstrip("0").rstrip("."), (e["id"], key)  # same digits
        else:
            assert value == float(printed), (e["id"], key)
        if e["task"] == "rad-bench":
            assert 1.0 <= value <= 10.0 and scale.startswith("GPT-4o judge score, 1-10"), e["id"]
        else:
            assert scale in ("percent", "fraction") and 0.0 <= value <= 1.0, (e["id"], key)


def test_every_cell_matches_the_seed(entries, seeds):
    """Each printed value equals the value the seed text shows at that row and column."""
    wrong = [
        (e["id"], column, printed, seed_value(seeds, file, table, row, column))
        for e, _, file, table, row, column, printed in published_cells(entries)
        if seed_value(seeds, file, table, row, column) != printed
    ]
    assert not wrong


def test_tables_transcribed_completely(entries, seeds):
    cells: dict[str, set] = {}
    for _, _, file, table, row, column, _ in published_cells(entries):
        cells.setdefault(f"{file}|{table}", set()).add((row, column))
    assert cells[f"{MTR}|Table 3"] == mtr_grouped_cells(seeds[MTR], "Table 3:")
    assert cells[f"{MTR}|Table 11"] == mtr_grouped_cells(seeds[MTR], "Table 11:")
    assert len(cells[f"{MTR}|Table 3"]) == 6 * 12 and len(cells[f"{MTR}|Table 11"]) == 8 * 12
    assert len(cells[f"{MTR}|Table 5"]) == 3 * 6
    assert len(cells[f"{CORAL}|Table 2"]) == 7 * 5
    assert len(cells[f"{MTRAG}|README 'Results' table"]) == 6 * 8
    assert len(cells[f"{HRAG}|Table 2"]) == 18 * 6
    assert len(cells[f"{HRAG}|Section 5.1"]) == 5
    assert len(cells[f"{RAD}|Table 2"]) == 12 * 7
    for table in ("Table 19", "Table 20"):
        printed = {(row, f"{c} x") for row in bridge_rows(seeds[DREAM], table + ":") for c in BRIDGE_COLUMNS}
        assert {(r, c.split()[0] + " x") for r, c in cells[f"{DREAM}|{table}"]} == printed
        assert len(printed) == 25 * 8


PAPER_METRIC = {
    "Hit": "hit_rate",
    "R": "recall",
    "Recall": "recall",
    "M": "mrr",
    "N": "ndcg",
    "nDCG": "ndcg",
    "NDCG": "ndcg",
}
MTR_TASK = {
    "QReCC": "chatrag-qrecc",
    "QuAC": "chatrag-quac",
    "Doc2Dial": "chatrag-doc2dial",
    "TopiOCQA": "chatrag-topiocqa",
    "MTR-BENCH": "mtr-bench-8turn",
}


def test_column_metric_and_task_mapping(entries):
    """The metric key follows from the printed column label; MTR-SUITE datasets map to mtrbench tasks."""
    for e, key, file, table, row, column, _ in published_cells(entries):
        label = column.split()[-1]
        m = re.fullmatch(r"(\w+)@(\d+)", label)
        if m:
            assert key == f"{PAPER_METRIC[m[1]]}_at_{m[2]}", (e["id"], column)
        elif file == CORAL:
            assert key == {"MRR": "mrr", "MAP": "map"}[label]
        else:
            assert file == RAD and key == f"judge_score_{label.lower()}", (e["id"], column)
        if file == MTR:
            dataset = "MTR-BENCH" if table == "Table 5" else column.split()[0]
            if dataset == "Average":
                assert e["source"]["table"] == f"{table} (Average column)" and e["task"].startswith("Average")
            else:
                assert e["task"] == MTR_TASK[dataset] and e["source"]["table"] == table, e["id"]
            assert e["settings"]["history"].startswith("full ("), e["id"]
        if file == DREAM:
            dataset = column.split()[0]
            if dataset == "Avg.":
                assert e["source"]["table"] == f"{table} (Average column)" and e["task"].startswith("Average")
            else:
                assert e["task"] == BRIDGE_TASKS[dataset] and e["source"]["table"] == table, e["id"]
            assert e["settings"]["qrels"] == "refined (BRIDGE)", e["id"]
        if file == MTRAG:
            setup = row.split("|")[1].strip()
            assert (
                e["settings"]["history"]
                == {"Last Turn": "current (paper: Last Turn)", "Query Rewrite": "rewrite (paper: Query Rewrite)"}[setup]
            )


def test_one_entry_per_system_and_task_within_a_table(entries):
    """The builder ranks one entry per system and task inside a (citation, table) group."""
    seen = set()
    for e in entries:
        key = (
            e["source"]["citation"],
            e["source"]["table"],
            e["task"],
            e["model"],
            json.dumps(e["settings"], sort_keys=True),
        )
        assert key not in seen, e["id"]
        seen.add(key)


# Hand-read from the papers (not from reported.json): file, table, row, column, printed value, metric key.
SPOT_CHECKS = [
    (MTR, "Table 3", "bge-large-en-v1.5", "MTR-BENCH R@20", "35.04", "recall_at_20"),
    (MTR, "Table 3", "Dragon-ChatQA", "QuAC R@5", "86.13", "recall_at_5"),
    (MTR, "Table 3", "gte-modernbert-base", "Average R@20", "87.53", "recall_at_20"),
    (MTR, "Table 5", "gte-Qwen2-7B-instruct", "R@1000", "82.2", "recall_at_1000"),
    (MTR, "Table 5", "ChatQA-Context", "R@1", "29.1", "recall_at_1"),
    (MTR, "Table 11", "MTR-modernbert-base", "MTR-BENCH N@20", "70.12", "ndcg_at_20"),
    (MTR, "Table 11", "stella_en_400m_v5", "TopiOCQA M@20", "29.22", "mrr_at_20"),
    (MTR, "Table 11", "Dragon-DocChat", "QReCC N@20", "79.51", "ndcg_at_20"),
    (CORAL, "Table 2", "KD-ANCE-C", "NDCG@3", "24.9", "ndcg_at_3"),
    (CORAL, "Table 2", "LLM4CS (GPT-3.5)", "Recall@100", "44.4", "recall_at_100"),
    (CORAL, "Table 2", "Conv-ANCE-Q", "MRR", "19.8", "mrr"),
    (MTRAG, "README 'Results' table", "Elser | Query Rewrite", "nDCG@10", "0.54", "ndcg_at_10"),
    (MTRAG, "README 'Results' table", "BGE-base 1.5 | Last Turn", "R@5", "0.30", "recall_at_5"),
    (HRAG, "Section 5.1", "H-RAG (final submission dataset)", "nDCG@5", "0.4271", "ndcg_at_5"),
    (HRAG, "Section 5.1", "baseline model", "Recall@5", "0.49", "recall_at_5"),
    (HRAG, "Table 2", "α=0.7, rank_parents=true, k=30", "nDCG@5", "0.4872", "ndcg_at_5"),
    (HRAG, "Table 2", "α=0.9, rank_parents=false, k=20", "Recall@5", "0.4746", "recall_at_5"),
    (RAD, "Table 2", "Deepseek-v2", "Travel", "7.95", "judge_score_travel"),
    (RAD, "Table 2", "GPT-4o", "Average", "8.72", "judge_score_average"),
    (RAD, "Table 2", "Mistral-Nemo-12B", "Travel", "3.55", "judge_score_travel"),
    (RECOR, "Abstract", "History+Reasoning", "nDCG@10", ".479", "ndcg_at_10"),
    (DREAM, "Table 19", "Arctic", "MS Hit@10", "0.89", "hit_rate_at_10"),
    (DREAM, "Table 19", "ANCE + MonoT5", "Avg. Hit@10", "0.83", "hit_rate_at_10"),
    (DREAM, "Table 19", "BPR", "Tech Hit@10", "0.51", "hit_rate_at_10"),
    (DREAM, "Table 20", "TCT-COLBERT", "NQ nDCG@10", "0.41", "ndcg_at_10"),
    (DREAM, "Table 20", "BM25 + HyDE", "Writ nDCG@10", "0.33", "ndcg_at_10"),
]


@pytest.mark.parametrize(
    "file,table,row,column,printed,key",
    SPOT_CHECKS,
    ids=[f"{Path(c[0]).stem}|{c[1]}|{c[2]}|{c[3]}" for c in SPOT_CHECKS],
)
def test_spot_check(entries, seeds, file, table, row, column, printed, key):
    assert seed_value(seeds, file, table, row, column) == printed
    wanted = (file, table, row, column)
    found = [(e, k, p) for e, k, f, t, r, c, p in published_cells(entries) if (f, t, r, c) == wanted]
    assert len(found) == 1, "cell not transcribed exactly once"
    entry, found_key, found_printed = found[0]
    assert (found_key, found_printed) == (key, printed)
    expected = float(printed) / 100 if entry["source"]["published_scale"] == "percent" else float(printed)
    assert entry["scores"][key] == pytest.approx(expected, abs=1e-12)
