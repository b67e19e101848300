"""RAD-Bench (SCHEMAS.md §8): generation-only, read into its own typed model, not TaskData."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest
from cli_run import run_cli

from mtrbench.data import load_task
from mtrbench.data.cards import get_card
from mtrbench.data.loaders.rad_bench import RadBench, load_rad_bench
from mtrbench.infra.errors import MtrbenchError


@pytest.fixture(scope="module")
def fixture(shared) -> Path:
    return shared / "datasets/fixtures/rad_bench"


@pytest.fixture(scope="module")
def real(shared) -> Path:
    return shared / "datasets/real/rad-bench"


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def paper_scores(judgments: list[dict]) -> dict[str, dict[str, float]]:
    """scripts/script_final_plots.py: mean over turns of the per-turn mean, per model and category; -1 kept."""
    out = {}
    for model in {j["model"] for j in judgments}:
        per_category = {}
        for category in {j["question_id"].split("_")[1] for j in judgments}:
            rows = [j for j in judgments if j["model"] == model and f"_{category}_" in j["question_id"]]
            if rows:
                per_category[category] = statistics.mean(
                    statistics.mean(j["score"] for j in rows if j["turn"] == t)
                    for t in sorted({j["turn"] for j in rows})
                )
        out[model] = {**per_category, "average": statistics.mean(per_category.values())}
    return out


def test_fixture_files(fixture):
    bench = load_rad_bench(fixture)
    data = fixture / "data"
    assert isinstance(bench, RadBench) and bench.path == data
    questions = jsonl(data / "questions.jsonl")
    assert (
        list(bench.questions)
        == [q["question_id"] for q in questions]
        == ["RS_academic_00", "RR_customer_00", "TR_travel_00"]
    )
    for raw in questions:
        q = bench.questions[raw["question_id"]]
        assert q.turns == tuple(raw["turns"]) and len(q.turns) == 3
        assert q.contexts == tuple((c,) if isinstance(c, str) else tuple(c) for c in raw["contexts"])
        assert q.references == tuple(raw["references"]) and (q.aspect, q.category) == (raw["aspect"], raw["category"])
    assert bench.questions["RR_customer_00"].evidence_text is not None
    assert bench.questions["RS_academic_00"].evidence_text is None
    assert len(bench.questions["RS_academic_00"].contexts[0]) == 2  # a list context
    assert bench.questions["TR_travel_00"].contexts[0][0].strip()  # a plain string context
    refs = jsonl(data / "reference_answer/reference_ans_model.jsonl")
    assert {k: v.turns for k, v in bench.reference_answers.items()} == {
        r["question_id"]: tuple(r["choices"][0]["turns"]) for r in refs
    }
    assert sorted(bench.model_answers) == ["model-a", "model-b"]
    for model in bench.model_answers:
        raw = jsonl(data / f"model_answer/{model}.jsonl")
        assert {k: (v.answer_id, v.turns) for k, v in bench.model_answers[model].items()} == {
            r["question_id"]: (r["answer_id"], tuple(r["choices"][0]["turns"])) for r in raw
        }
    judgments = jsonl(data / "model_judgment/gpt-4o.jsonl")
    assert len(bench.judgments) == len(judgments) == 18
    assert [(j.question_id, j.model, j.turn, j.score, j.judge) for j in bench.judgments] == [
        (j["question_id"], j["model"], j["turn"], j["score"], tuple(j["judge"])) for j in judgments
    ]
    assert bench.judgment_sources == ["gpt-4o.jsonl"]
    prompts = jsonl(data / "judge_prompts.jsonl")
    assert list(bench.judge_prompts) == [p["name"] for p in prompts] and len(prompts) == 9
    assert dict(bench.warnings) == {}


def test_fixture_scores_follow_the_paper(fixture):
    bench = load_rad_bench(fixture / "data")
    judgments = jsonl(fixture / "data/model_judgment/gpt-4o.jsonl")
    scores = bench.category_scores()
    assert scores.keys() == paper_scores(judgments).keys()
    for model, expected in paper_scores(judgments).items():
        assert scores[model] == pytest.approx(expected)
    # hand-computed: model-b's customer turn 3 is -1 (unparsable) and is kept: (6 + 7 - 1) / 3 = 4
    assert scores["model-b"]["customer"] == pytest.approx(4.0)
    assert list(scores["model-a"]) == ["academic", "customer", "travel", "average"]


def test_real_judgment_sample(real):
    bench = load_rad_bench(real)
    raw = jsonl(real / "model_judgment_sample.jsonl")
    assert len(bench.judgments) == len(raw) == 60
    assert (
        {j.question_id for j in bench.judgments}
        == {r["question_id"] for r in raw}
        == {"RS_academic_00", "RS_academic_01", "RS_academic_02"}
    )
    assert sorted({j.model for j in bench.judgments}) == sorted({r["model"] for r in raw})
    assert [(j.question_id, j.model, j.turn, j.score, j.type) for j in bench.judgments] == [
        (r["question_id"], r["model"], r["turn"], r["score"], r["type"]) for r in raw
    ]
    prompts = jsonl(real / "judge_prompts.jsonl")
    assert list(bench.judge_prompts) == [p["name"] for p in prompts]
    assert {"RS-1-turn", "RR-3-turn", "TR-2-turn"} <= set(bench.judge_prompts)
    assert bench.judge_prompts["RS-2-turn"].description is None  # this record has no description
    scores = bench.category_scores()
    for model, expected in paper_scores(raw).items():
        assert scores[model] == pytest.approx(expected)
    assert bench.questions == {} and bench.warnings["questions.jsonl not found (questions empty)"] == 1


def _copy(fixture: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "rad"
    shutil.copytree(fixture, folder)
    return folder / "data"


def _rewrite(path: Path, index: int, change) -> None:
    rows = jsonl(path)
    change(rows[index])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize(
    "file,index,change,needle",
    [
        (
            "model_judgment/gpt-4o.jsonl",
            4,
            lambda r: r.pop("turn"),
            r"gpt-4o\.jsonl record 4 \(RR_customer_00\): 'turn'",
        ),
        (
            "model_judgment/gpt-4o.jsonl",
            2,
            lambda r: r.update(type="XX"),
            r"gpt-4o\.jsonl record 2 \(RS_academic_00\): 'type'",
        ),
        (
            "questions.jsonl",
            1,
            lambda r: r["contexts"].pop(),
            r"questions\.jsonl record 1 \(RR_customer_00\): 'contexts'",
        ),
        (
            "questions.jsonl",
            2,
            lambda r: r["contexts"].__setitem__(0, 7),
            r"questions\.jsonl record 2 \(TR_travel_00\): contexts\[0\]",
        ),
        (
            "model_answer/model-b.jsonl",
            0,
            lambda r: r.pop("choices"),
            r"model-b\.jsonl record 0 \(RS_academic_00\): needs 'choices'",
        ),
        ("judge_prompts.jsonl", 3, lambda r: r.pop("prompt_template"), r"judge_prompts\.jsonl record 3 \(TR-1-turn\)"),
    ],
)
def test_malformed_records_name_file_and_record(fixture, tmp_path, file, index, change, needle):
    data = _copy(fixture, tmp_path)
    _rewrite(data / file, index, change)
    with pytest.raises(MtrbenchError, match=needle):
        load_rad_bench(data)


def test_bad_json_line_names_file_and_record(fixture, tmp_path):
    data = _copy(fixture, tmp_path)
    path = data / "reference_answer/reference_ans_model.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:-5]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MtrbenchError, match=r"reference_ans_model\.jsonl record 2: not valid JSON"):
        load_rad_bench(data)


def test_several_judgment_files_need_a_choice(fixture, tmp_path):
    data = _copy(fixture, tmp_path)
    shutil.copy(data / "model_judgment/gpt-4o.jsonl", data / "model_judgment/gpt-4o-judgements.jsonl")
    bench = load_rad_bench(data.parent.parent / "rad")  # the clone-like parent folder also resolves to data/
    assert bench.judgment_sources == ["gpt-4o-judgements.jsonl", "gpt-4o.jsonl"] and len(bench.judgments) == 36
    with pytest.raises(MtrbenchError, match="several files"):
        bench.category_scores()
    assert bench.category_scores("gpt-4o.jsonl") == bench.category_scores("gpt-4o-judgements.jsonl")


def test_not_a_rad_bench_folder(tmp_path):
    with pytest.raises(MtrbenchError, match="no RAD-Bench files"):
        load_rad_bench(tmp_path)


def test_card_and_task_loader():
    card = get_card("rad-bench")
    assert card.type == "generation" and card.format == "rad-bench"
    with pytest.raises(MtrbenchError, match="generation benchmark.*load_rad_bench"):
        load_task("rad-bench")


@pytest.mark.slow
def test_cli_end_to_end():
    """The card lists and shows; `eval` refuses it with one clear line instead of a traceback."""
    proc = run_cli("tasks", "show", "rad-bench")
    assert proc.returncode == 0 and "type: generation" in proc.stdout
    proc = run_cli("eval", "--task", "rad-bench", "--model", "minilm", "--quiet", "--output-dir", "/nonexistent-never-written")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    # evaluate.py rejects a generation task before any loading; load_task itself names load_rad_bench
    # (test_card_and_task_loader)
    assert len(errors) == 1 and "generation task, not a retrieval task" in errors[0]
