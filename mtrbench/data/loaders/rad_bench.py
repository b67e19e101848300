"""RAD-Bench (GitHub ``mtkresearch/RAD-Bench``): retrieval-augmented *dialogue*, generation only. SCHEMAS.md §8.

RAD-Bench gives the retrieved contexts with each question and scores answers with an LLM judge
(MT-Bench style); there is no corpus to retrieve from, so it does not fit ``TaskData``. ``load_rad_bench``
reads its files into the typed :class:`RadBench` instead:

* ``questions.jsonl``: ``question_id`` (``<ASPECT>_<category>_<nn>``), ``category``, ``aspect``, ``turns``
  (3 user questions), ``contexts`` (one per turn, a string or a list of strings), ``references``,
  ``evidence_text`` (RR only);
* ``reference_answer/*.jsonl`` and ``model_answer/<model>.jsonl``: ``question_id``, ``answer_id``,
  ``model_id``, ``choices[0].turns`` (3 answers), ``tstamp``;
* ``model_judgment/*.jsonl`` (and top-level ``*judg*.jsonl`` files, e.g. a published sample): ``question_id``,
  ``turn`` (1-3), ``type`` (RS|RR|TR), ``score`` (1-10, -1 = unparsable), ``model``, ``judge``
  (``[judge model, "<TYPE>-<turn>-turn"]``), ``judgment``, ``tstamp``;
* ``judge_prompts.jsonl``: ``name``, ``type``, ``system_prompt``, ``prompt_template``, ``description``,
  ``category``, ``output_format``.

``path`` may be the repository clone, its ``rad_bench`` folder, the ``data`` folder, or any folder holding
some of these files (missing parts are empty and noted in ``warnings``). :meth:`RadBench.category_scores`
reproduces the paper's per-scenario averages (``scripts/script_final_plots.py``).

The ``rad-bench`` task card (type ``generation``) registers a loader that refuses retrieval evaluation with
a pointer to ``load_rad_bench``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import read_jsonl_records as _read_jsonl
from mtrbench.data.model import TaskData
from mtrbench.infra.errors import DataError, UserInputError
from mtrbench.infra.numeric import RATING_SCALE, on_scale

ASPECTS = ("RS", "RR", "TR")  # retrieval synthesis, retrieval reasoning, travel (TR)
CATEGORIES = ("academic", "news", "education", "finance", "customer", "travel")  # the paper's order
QUESTION_ID = re.compile(r"(RS|RR|TR)_([A-Za-z]+)_(\d+)")


@dataclass(frozen=True)
class RadQuestion:
    question_id: str
    aspect: str
    category: str
    turns: tuple[str, ...]
    contexts: tuple[tuple[str, ...], ...]  # per turn; a single-string context becomes a 1-tuple
    references: tuple[str, ...] = ()
    evidence_text: tuple[str, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RadAnswer:
    question_id: str
    answer_id: str
    model_id: str
    turns: tuple[str, ...]
    tstamp: float | None = None


@dataclass(frozen=True)
class RadJudgment:
    question_id: str
    turn: int
    type: str
    score: float  # 1-10; -1 = the judge's rating could not be parsed (kept, as the paper's averages keep it)
    model: str
    judge: tuple[str, ...]
    judgment: str
    tstamp: float | None = None
    source: str = ""  # judgment file name

    @property
    def category(self) -> str:
        return category_of(self.question_id)


@dataclass(frozen=True)
class JudgePrompt:
    name: str
    type: str
    system_prompt: str
    prompt_template: str
    description: str | None = None
    category: str | None = None
    output_format: str | None = None


@dataclass
class RadBench:
    path: Path
    questions: dict[str, RadQuestion] = field(default_factory=dict)
    reference_answers: dict[str, RadAnswer] = field(default_factory=dict)
    model_answers: dict[str, dict[str, RadAnswer]] = field(default_factory=dict)  # model -> question_id -> answer
    judgments: list[RadJudgment] = field(default_factory=list)
    judge_prompts: dict[str, JudgePrompt] = field(default_factory=dict)
    warnings: Counter = field(default_factory=Counter)

    @property
    def judgment_sources(self) -> list[str]:
        return sorted({j.source for j in self.judgments})

    def category_scores(self, source: str | None = None) -> dict[str, dict[str, float]]:
        """model -> {category: score, ..., "average": mean of the category scores}.

        score(model, category) = mean over turns t of mean{score : that model, category, turn t}; -1 scores
        are not filtered (as in the paper's script). ``source`` picks one judgment file when there are several.
        """
        sources = self.judgment_sources
        if source is None and len(sources) > 1:
            raise UserInputError(f"{self.path}: judgments come from several files {sources}; pass source=")
        rows = [j for j in self.judgments if source is None or j.source == source]
        if source is not None and not rows:
            raise UserInputError(f"{self.path}: no judgments from '{source}' (files: {sources})")
        cells: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(list))
        )
        for j in rows:
            cells[j.model][j.category][j.turn].append(j.score)
        out: dict[str, dict[str, float]] = {}
        for model, by_category in cells.items():
            order = [c for c in CATEGORIES if c in by_category] + sorted(set(by_category) - set(CATEGORIES))
            scores = {c: _mean([_mean(by_category[c][t]) for t in sorted(by_category[c])]) for c in order}
            scores["average"] = _mean(list(scores.values()))
            out[model] = scores
        return out


def category_of(question_id: str) -> str:
    match = QUESTION_ID.fullmatch(question_id)
    return match.group(2) if match else question_id.split("_")[1] if question_id.count("_") >= 2 else ""


def load_rad_bench(path: str | Path, *, judgments: list[str | Path] | None = None) -> RadBench:
    """Read RAD-Bench's data folder (or a clone, or a folder with some of its files) into :class:`RadBench`.

    ``judgments`` overrides which judgment files are read (default: ``model_judgment/*.jsonl`` plus
    top-level ``*judg*.jsonl`` other than ``judge_prompts.jsonl``).
    """
    root = _data_dir(Path(path).expanduser())
    bench = RadBench(path=root)
    questions_file = root / "questions.jsonl"
    if questions_file.is_file():
        for n, row in _read_jsonl(questions_file):
            question = _question(row, f"{questions_file} record {n}")
            if question.question_id in bench.questions:
                raise DataError(f"{questions_file} record {n} ({question.question_id}): duplicate question_id")
            bench.questions[question.question_id] = question
    else:
        bench.warnings["questions.jsonl not found (questions empty)"] += 1

    for file in sorted((root / "reference_answer").glob("*.jsonl")):
        for n, row in _read_jsonl(file):
            answer = _answer(row, f"{file} record {n}")
            bench.reference_answers[answer.question_id] = answer
    for file in sorted((root / "model_answer").glob("*.jsonl")):
        for n, row in _read_jsonl(file):
            answer = _answer(row, f"{file} record {n}")
            per_model = bench.model_answers.setdefault(answer.model_id, {})
            if answer.question_id in per_model:
                bench.warnings["duplicate model answers (last kept)"] += 1
            per_model[answer.question_id] = answer

    if judgments is None:
        files = sorted((root / "model_judgment").glob("*.jsonl"))
        files += sorted(p for p in root.glob("*.jsonl") if "judg" in p.name.lower() and p.name != "judge_prompts.jsonl")
    else:
        files = [Path(f) for f in judgments]
    seen: set[tuple] = set()
    for file in files:
        for n, row in _read_jsonl(file):
            judgment = _judgment(row, f"{file} record {n}", file.name)
            key = (judgment.source, judgment.question_id, judgment.model, judgment.turn, judgment.judge)
            if key in seen:
                bench.warnings["duplicate judgments (question, model, turn, judge) in one file"] += 1
            seen.add(key)
            if bench.questions and judgment.question_id not in bench.questions:
                bench.warnings["judgments of questions not in questions.jsonl"] += 1
            bench.judgments.append(judgment)
    if not files:
        bench.warnings["no judgment files found"] += 1

    prompts_file = root / "judge_prompts.jsonl"
    if prompts_file.is_file():
        for n, row in _read_jsonl(prompts_file):
            prompt = _prompt(row, f"{prompts_file} record {n}")
            bench.judge_prompts[prompt.name] = prompt
    else:
        bench.warnings["judge_prompts.jsonl not found"] += 1
    if not (bench.questions or bench.judgments or bench.model_answers or bench.reference_answers):
        raise DataError(
            f"{path}: no RAD-Bench files found (questions.jsonl, model_answer/, reference_answer/, "
            f"model_judgment/); pass the rad_bench/data folder of github.com/mtkresearch/RAD-Bench"
        )
    return bench


@register("rad-bench")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    raise UserInputError(
        f"{card.name} is a generation benchmark (contexts are given, answers are judged by an LLM); "
        f"it has no retrieval corpus to evaluate a retriever on. Read it with "
        f"mtrbench.data.loaders.rad_bench.load_rad_bench(PATH)"
    )


# ------------------------------------------------------------------------------------------ records


def _data_dir(path: Path) -> Path:
    if not path.exists():
        raise DataError(f"RAD-Bench folder {path} does not exist")
    for candidate in (path / "rad_bench" / "data", path / "data", path):
        if candidate.is_dir() and any(
            (candidate / name).exists()
            for name in ("questions.jsonl", "model_answer", "model_judgment", "reference_answer", "judge_prompts.jsonl")
        ):
            return candidate
    return path


def _question(row: Any, where: str) -> RadQuestion:
    if not isinstance(row, dict) or not isinstance(row.get("question_id"), str):
        raise DataError(f"{where}: needs a string 'question_id'")
    qid = row["question_id"]
    where = f"{where} ({qid})"
    turns = row.get("turns")
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
        raise DataError(f"{where}: 'turns' must be a non-empty list of strings")
    contexts = row.get("contexts")
    if not isinstance(contexts, list) or len(contexts) != len(turns):
        raise DataError(f"{where}: 'contexts' must be a list with one entry per turn ({len(turns)})")
    normalized = []
    for i, context in enumerate(contexts):
        if isinstance(context, str):
            normalized.append((context,))
        elif isinstance(context, list) and all(isinstance(c, str) for c in context):
            normalized.append(tuple(context))
        else:
            raise DataError(f"{where}: contexts[{i}] must be a string or a list of strings")
    references = row.get("references") or []
    evidence = row.get("evidence_text")
    for name, value in (("references", references), ("evidence_text", evidence or [])):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise DataError(f"{where}: '{name}' must be a list of strings")
    match = QUESTION_ID.fullmatch(qid)
    aspect = row.get("aspect") or (match.group(1) if match else None)
    category = row.get("category") or (match.group(2) if match else None)
    if not aspect or not category:
        raise DataError(f"{where}: needs 'aspect' and 'category' (or an id '<ASPECT>_<category>_<nn>')")
    known = {"question_id", "aspect", "category", "turns", "contexts", "references", "evidence_text"}
    return RadQuestion(
        question_id=qid,
        aspect=str(aspect),
        category=str(category),
        turns=tuple(turns),
        contexts=tuple(normalized),
        references=tuple(references),
        evidence_text=tuple(evidence) if evidence is not None else None,
        extra={k: v for k, v in row.items() if k not in known},
    )


def _answer(row: Any, where: str) -> RadAnswer:
    if not isinstance(row, dict) or not isinstance(row.get("question_id"), str):
        raise DataError(f"{where}: needs a string 'question_id'")
    where = f"{where} ({row['question_id']})"
    choices = row.get("choices")
    if (
        not isinstance(choices, list)
        or not choices
        or not isinstance(choices[0], dict)
        or not isinstance(choices[0].get("turns"), list)
        or not all(isinstance(t, str) for t in choices[0]["turns"])
    ):
        raise DataError(f"{where}: needs 'choices': [{{'index': 0, 'turns': [answer per turn]}}]")
    if row.get("model_id") is None:
        raise DataError(f"{where}: needs 'model_id'")
    return RadAnswer(
        question_id=row["question_id"],
        answer_id=str(row.get("answer_id") or ""),
        model_id=str(row["model_id"]),
        turns=tuple(choices[0]["turns"]),
        tstamp=row.get("tstamp"),
    )


def _judgment(row: Any, where: str, source: str) -> RadJudgment:
    if not isinstance(row, dict) or not isinstance(row.get("question_id"), str):
        raise DataError(f"{where}: needs a string 'question_id'")
    where = f"{where} ({row['question_id']})"
    turn, score = row.get("turn"), row.get("score")
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
        raise DataError(f"{where}: 'turn' must be an integer >= 1")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise DataError(f"{where}: 'score' must be a number (-1 for an unparsable rating)")
    on_scale(score, where, "'score'", RATING_SCALE)
    if not isinstance(row.get("model"), str):
        raise DataError(f"{where}: needs a string 'model'")
    judge = row.get("judge")
    if not isinstance(judge, list) or not all(isinstance(j, str) for j in judge):
        raise DataError(f"{where}: 'judge' must be a list like ['gpt-4o', 'RS-1-turn']")
    kind = row.get("type")
    if kind not in ASPECTS:
        raise DataError(f"{where}: 'type' must be one of {list(ASPECTS)}, got {kind!r}")
    return RadJudgment(
        question_id=row["question_id"],
        turn=turn,
        type=kind,
        score=score,
        model=row["model"],
        judge=tuple(judge),
        judgment=str(row.get("judgment") or ""),
        tstamp=row.get("tstamp"),
        source=source,
    )


def _prompt(row: Any, where: str) -> JudgePrompt:
    if not isinstance(row, dict) or not isinstance(row.get("name"), str):
        raise DataError(f"{where}: needs a string 'name'")
    for key in ("type", "prompt_template"):
        if not isinstance(row.get(key), str):
            raise DataError(f"{where} ({row['name']}): needs a string '{key}'")
    return JudgePrompt(
        name=row["name"],
        type=row["type"],
        system_prompt=str(row.get("system_prompt") or ""),
        prompt_template=row["prompt_template"],
        description=row.get("description"),
        category=row.get("category"),
        output_format=row.get("output_format"),
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
