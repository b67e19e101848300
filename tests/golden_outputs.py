"""Reference ("golden") result files: the scenarios that write them, the normalizer, the stored snapshots.

Issue 31 restructures mtrbench without changing behaviour: the result files of the sample evaluation (every
history, BM25 and MiniLM) and of the generate / judge fixtures must stay byte-identical apart from what
legitimately varies between two runs. ``tests/project/test_golden_outputs.py`` runs each scenario below and
compares its normalized files with the ones stored under ``tests/data/golden/<scenario>/``, which
``tests/data/golden/regenerate.py`` wrote on the pre-refactor commit.

What the normalizer changes, and nothing else (every other byte is compared):

- in every file, as text: the folder holding the scenario's output and scratch folders -> ``<tmp>``, this
  checkout's root -> ``<repo>`` (absolute paths in recorded commands and inputs), and the scripted LLM server's address
  ``http://127.0.0.1:<any port>`` -> ``http://127.0.0.1:<port>`` (a free port is picked per run);
- in ``.json`` documents and each line of ``.jsonl`` files, the values (never the keys) at ``BLANKED``:
  timings, dates, host information, installed package versions, and the embedding cache's shard counts
  (a shard is closed after 60 s of encoding, so their number follows the machine's speed).
  The document is then written back exactly as the writer wrote it (indent, ascii escaping, final newline
  are detected and reproduced; a document that ``json.dumps`` cannot reproduce byte for byte is an error).

Files over ``DIGEST_OVER`` characters once normalized (TREC runs, per-query files) are stored as a digest:
their sha256, line count, first lines, and one short hash per block of lines so a failure names the first
differing line (per-query files: exactly; runs: within a block of about 80 lines). Each scenario also writes
``commands.json`` (every command it ran, with its exit status), compared like the result files.

Not compared: the inputs a scenario writes itself (``Scenario.inputs``: run files, the judges file) and the
LLM request logs (``JUDGE_LOG``, ``REWRITER_LOG``: judge's ``judgments.jsonl``, eval's ``*.rewriter.jsonl``),
whose record layout issue 31 unifies on purpose; what they hold that a result depends on (ratings, verdicts, failures and their
reasons, failed qids) is in the result files, which are compared.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_server import Reply, ScriptedChatServer

from mtrbench.cli import main

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
GOLDEN = DATA / "golden"
KEY_ENV = "MTRBENCH_GOLDEN_TEST_KEY"
GENERATIONS = DATA / "generations-sample.jsonl"
NATIVE_MINI = DATA / "native-mini"
RAD_BENCH = DATA / "shared" / "datasets" / "fixtures" / "rad_bench" / "data"

# ------------------------------------------------------------------------------------------- normalizer

PLACEHOLDER = "<normalized>"
LLM_SERVER = re.compile(r"http://127\.0\.0\.1:\d+")
# Key paths whose value is replaced by PLACEHOLDER ("*": every key of an object); absent paths are skipped.
BLANKED: tuple[tuple[str, ...], ...] = (
    # eval result JSON (mteb's fields, then mtrbench's)
    ("evaluation_time",),
    ("date",),
    ("mteb_version",),
    ("mtrbench", "version"),
    ("mtrbench", "date"),
    ("mtrbench", "timings_s", "*"),
    ("mtrbench", "hardware"),
    ("mtrbench", "settings", "retriever", "bm25s_version"),
    ("mtrbench", "embedding_cache", "shards"),
    ("mtrbench", "embedding_cache", "loaded"),
    ("mtrbench", "embedding_cache", "encoded"),
    ("mtrbench", "embedding_cache", "lock_wait_s"),
    # judge summary.json, scores.json (its judge block), rad-bench table.json (its summary block)
    ("mtrbench_version",),
    ("judge", "mtrbench_version"),
    ("summary", "mtrbench_version"),
    # generate's generations.jsonl records
    ("time",),
)
DIGEST_OVER = 50_000  # characters of normalized text
DIGEST_BLOCKS = 256
SHOWN_LINES = 3
# LLM request logs (see the module docstring): judge's log by file name, eval's rewriter log by ending.
# A scenario's own input files are its ``inputs``.
JUDGE_LOG, REWRITER_LOG = "judgments.jsonl", ".rewriter.jsonl"
_JSON_FORMATS = [
    {"indent": indent, "ensure_ascii": ascii_only} for indent in (2, None, 4) for ascii_only in (False, True)
]


def _blank(value: Any, path: tuple[str, ...]) -> None:
    if not path or not isinstance(value, dict):
        return
    head, rest = path[0], path[1:]
    for key in list(value) if head == "*" else [head] if head in value else []:
        if rest:
            _blank(value[key], rest)
        else:
            value[key] = PLACEHOLDER


def _normalize_json(text: str, name: str) -> str:
    document = json.loads(text)
    for fmt in _JSON_FORMATS:
        dumped = json.dumps(document, **fmt)
        ending = text[len(dumped) :]
        if text.startswith(dumped) and ending in ("", "\n"):
            break
    else:
        raise ValueError(f"{name}: json.dumps cannot reproduce this document byte for byte; normalize it by hand")
    for path in BLANKED:
        _blank(document, path)
    return json.dumps(document, **fmt) + ending


def normalize(text: str, name: str, out: Path) -> str:
    """``text`` of the file ``name`` a scenario wrote under ``out`` (its scratch space beside it), with only the
    fields the module docstring lists changed."""
    text = text.replace(str(out.parent), "<tmp>").replace(str(ROOT), "<repo>")
    text = LLM_SERVER.sub("http://127.0.0.1:<port>", text)
    if name.endswith(".json"):
        return _normalize_json(text, name)
    if name.endswith(".jsonl"):
        return "".join(_normalize_json(line, name) for line in text.splitlines(keepends=True))
    return text


# ------------------------------------------------------------------------------------- snapshots, compare


def _short(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def digest(text: str) -> dict[str, Any]:
    """What is stored of a large normalized file."""
    lines = text.splitlines(keepends=True)
    block = max(1, math.ceil(len(lines) / DIGEST_BLOCKS))
    return {
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "lines": len(lines),
        "first_lines": lines[:SHOWN_LINES],
        "block_lines": block,
        "blocks": " ".join(_short("".join(lines[i : i + block])) for i in range(0, len(lines), block)),
    }


def snapshot(out: Path, inputs: tuple[str, ...] = ()) -> dict[str, str]:
    """Stored form of every compared file under ``out`` (``inputs``: relative names a scenario wrote itself):
    relative name -> normalized text, or for a large file ``<name>.digest.json`` -> its digest as JSON."""
    stored: dict[str, str] = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        name = path.relative_to(out).as_posix()
        if name in inputs or path.name == JUDGE_LOG or name.endswith(REWRITER_LOG):
            continue
        text = normalize(path.read_text(encoding="utf-8"), name, out)
        if len(text) > DIGEST_OVER:
            stored[f"{name}.digest.json"] = json.dumps(digest(text), indent=1) + "\n"
        else:
            stored[name] = text
    return stored


def _excerpt(line: str, column: int, width: int = 100) -> str:
    start = max(0, column - width // 2)
    return ("..." if start else "") + line[start : start + width] + ("..." if start + width < len(line) else "")


def _line_difference(where: str, a: str, b: str) -> str:
    column = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"{where}, column {column + 1}\n  reference: {_excerpt(a, column)}\n  this run:  {_excerpt(b, column)}"


def _first_difference(name: str, expected: str, got: str) -> str:
    old, new = expected.splitlines(), got.splitlines()
    for number, (a, b) in enumerate(zip(old, new), start=1):
        if a != b:
            return _line_difference(f"{name}: first difference at line {number}", a, b)
    shorter = "this run" if len(new) < len(old) else "the reference"
    return f"{name}: {shorter} ends at line {min(len(old), len(new))} ({len(old)} lines stored, {len(new)} now)"


def _digest_difference(name: str, expected: dict[str, Any], got: dict[str, Any], text: str) -> str:
    """Stored as a digest: the first differing line when it is one of the stored first lines, else the block
    of lines (per-query files: one line) holding the first difference, as written now."""
    lines = text.splitlines()
    for number, (a, b) in enumerate(zip(expected["first_lines"], got["first_lines"]), start=1):
        if a != b:
            return _line_difference(f"{name}: first difference at line {number}", a.rstrip("\n"), b.rstrip("\n"))
    if expected["lines"] != got["lines"]:
        return f"{name}: {got['lines']} lines now, {expected['lines']} in the reference"
    block = expected["block_lines"]
    pairs = zip(expected["blocks"].split(), got["blocks"].split())
    index = next(i for i, (a, b) in enumerate(pairs) if a != b)
    shown = lines[index * block : (index + 1) * block]
    listing = "\n".join(f"  line {index * block + n + 1}: {_excerpt(line, 0, 300)}" for n, line in enumerate(shown[:5]))
    where = f"line {index * block + 1}" if block == 1 else f"lines {index * block + 1}-{index * block + len(shown)}"
    return f"{name}: first difference in {where} (stored as a digest: no reference text); now:\n{listing}"


def compare(scenario: Scenario, out: Path) -> list[str]:
    """One readable line (or a few) per difference between ``out`` and the stored reference of ``scenario``."""
    reference = GOLDEN / scenario.name
    stored = {p.relative_to(reference).as_posix(): p for p in reference.rglob("*") if p.is_file()}
    now = snapshot(out, scenario.inputs)
    problems = [f"{name}: written now, not in the reference" for name in sorted(set(now) - set(stored))]
    problems += [f"{name}: in the reference, not written now" for name in sorted(set(stored) - set(now))]
    for name in sorted(set(now) & set(stored)):
        expected = stored[name].read_text(encoding="utf-8")
        if expected == now[name]:
            continue
        if name.endswith(".digest.json"):
            original = name.removesuffix(".digest.json")
            text = normalize((out / original).read_text(encoding="utf-8"), original, out)
            problems.append(_digest_difference(original, json.loads(expected), json.loads(now[name]), text))
        else:
            problems.append(_first_difference(name, expected, now[name]))
    return problems


def write_reference(scenario: Scenario, out: Path) -> list[Path]:
    """Replace the stored reference of ``scenario`` with the snapshot of ``out`` (regenerate.py only)."""
    reference = GOLDEN / scenario.name
    for old in sorted(reference.rglob("*"), reverse=True) if reference.exists() else []:
        old.unlink() if old.is_file() else old.rmdir()
    written = []
    for name, text in snapshot(out, scenario.inputs).items():
        path = reference / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


# ------------------------------------------------------------------------------------------- scenarios

# A fixed retrieval run over tests/data/native-mini, the input of `generate`.
NATIVE_MINI_RUN = """c1_1 Q0 varn-depth 1 3.0 t
c1_1 Q0 varn-fish 2 2.0 t
c1_1 Q0 orrin-open 3 2.0 t
c1_2 Q0 varn-fish 1 9.0 t
c1_2 Q0 varn-depth 2 8.0 t
c1_3 Q0 orrin-design 1 1.0 t
c1_4 Q0 orrin-design 1 5.0 t
c1_4 Q0 orrin-open 2 4.0 t
c1_5 Q0 varn-depth 1 1.0 t
"""
# A fixed retrieval run over the generated turns of tests/data/generations-sample.jsonl (`judge run --ragalign`).
SAMPLE_RUN = (
    "geo-01_1 Q0 geo-varnholm-formation 1 9 r\ngeo-01_1 Q0 geo-halvard-history 2 8 r\n"
    "geo-01_2 Q0 geo-halvard-history 1 9 r\ngeo-01_2 Q0 geo-varnholm-dimensions 2 8 r\n"
    "geo-01_3 Q0 geo-varnholm-hydrology 1 9 r\n"
    "geo-01_4 Q0 geo-varnholm-formation 1 9 r\ngeo-01_4 Q0 geo-halvard-design 2 8 r\n"
)


def _number(*parts: str) -> int:
    return int(hashlib.sha256("|".join(parts).encode("utf-8")).hexdigest(), 16)


def _group(pattern: str, text: str) -> str:
    found = re.search(pattern, text, re.M | re.S)
    if found is None:
        raise AssertionError(f"scripted model: no {pattern!r} in the prompt {text[:300]!r}")
    return found.group(1)


class ScriptedModel:
    """One deterministic model for every prompt the scenarios send: the reply depends on the prompt alone (so
    the order and concurrency of requests cannot change a file), and a few prompts get unreadable replies to
    exercise the failure records."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        content = messages[-1]["content"]
        if system.startswith("You turn the last question"):
            return self.rewrite(content)
        if system.startswith("You condense"):
            return self.summary(content)
        if "[Assistant's answer]" in content:
            return self.judge(content)
        return self.answer(content)

    @staticmethod
    def rewrite(content: str) -> Reply:
        question = _group(r"\nLast question: (.*?)$", content)
        first = _group(r"^User: (.*?)$", content)
        if _number("rewrite", question, first) % 23 == 0:  # about 1 in 23: malformed, asked again, then failed
            return Reply("Several ways to put it.\nOne could ask many things.")
        return Reply(f"Sure.\nRewrite: {question} ({first})")

    @staticmethod
    def summary(content: str) -> Reply:
        return Reply("Summary: the user asked " + "; then ".join(re.findall(r"^User: (.*)$", content, re.M)))

    @staticmethod
    def answer(content: str) -> Reply:
        question = _group(r"Current question: (.*?)$", content)
        if question == "thanks!":
            return Reply("   ")  # empty every time: a failed turn
        passage = re.search(r"^\[1\] (.*)$", content, re.M)
        words = " ".join(passage.group(1).split()[:8]) if passage else "no passage"
        return Reply(f"About '{question}': {words} [1].")

    @staticmethod
    def judge(content: str) -> Reply:
        question = _group(r"\[Current question\]\n(.*?)\n\[End of current question\]", content)
        answer = _group(r"\[Assistant's answer\]\n(.*?)\n\[End of assistant's answer\]", content)
        value = _number("judge", question, answer)
        if value % 11 == 0:
            return Reply("I cannot decide.")
        if "Verdict: [[CORRECT]]" in content:
            return Reply(f"Checked.\nVerdict: [[{'INCORRECT' if value % 5 == 1 else 'CORRECT'}]]")
        return Reply(f"Reasonable.\nRating: [[{1 + value % 10}]]")


class Commands:
    """Runs mtrbench commands and records each one (arguments, exit status) in ``<out>/commands.json``,
    which is compared like the result files."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.ran: list[dict[str, Any]] = []

    def __call__(self, *args: str) -> int:
        code = main(list(args))
        self.ran.append({"args": list(args), "exit": code})
        return code

    def write(self) -> None:
        (self.out / "commands.json").write_text(json.dumps(self.ran, indent=2) + "\n", encoding="utf-8")


LLM_FLAGS = ("--no-llm-cache", "--yes", "--quiet")  # and --api-key-env KEY_ENV, or a judges file naming it


def eval_bm25(out: Path, work: Path) -> None:
    """`mtrbench eval --model bm25 --history all` on the embedded sample (six histories)."""
    commands = Commands(out)
    assert commands("eval", "--model", "bm25", "--history", "all", "--output-dir", str(out), "--quiet") == 0
    commands.write()


def eval_bm25_model_histories(out: Path, work: Path) -> None:
    """BM25 on the sample with the model histories rewrite:llm and summary:llm (a scripted rewriter that
    fails on two queries: left out of the rewrite:llm scores, counted)."""
    commands = Commands(out)
    with ScriptedChatServer(ScriptedModel()) as server:
        rewriter = ["--rewriter-model", "rw-model", "--rewriter-base-url", server.base_url, "--concurrency", "1"]
        history = ["--history", "rewrite:llm,summary:llm"]
        key = ["--api-key-env", KEY_ENV]
        assert commands("eval", "--model", "bm25", *history, *rewriter, *key, *LLM_FLAGS, "--output-dir", str(out)) == 0
    commands.write()


# The reference MiniLM runs were written with AVX2 kernels: on a CPU with AVX-512 (or AMX) oneDNN and MKL pick
# other kernels whose float sums differ in the 7th digit of the run files. A child process started with these
# caps computes as the reference did; torch reads them only when it loads, and setting them in the test session
# would change torch.compile's fused kernels for every other test.
AVX2_KERNELS = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "DNNL_MAX_CPU_ISA": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
}


def eval_minilm(out: Path, work: Path) -> None:
    """`mtrbench eval --history all` (MiniLM, the default model) on the sample, in a child process computing on
    one thread with AVX2 kernels (see AVX2_KERNELS) and a corpus embedding cache of its own: float scores depend
    on the thread count and the kernels (last digits of the run file), and the session's shared cache may hold
    embeddings another thread count encoded."""
    import subprocess
    import sys

    args = ["eval", "--history", "all", "--device", "cpu", "--cache-dir", str(work / "embeddings")]
    args += ["--output-dir", str(out), "--quiet"]
    env = {**os.environ, **AVX2_KERNELS, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    child = "import sys; from mtrbench.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", child, *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"eval exited {done.returncode}:\n{done.stderr[-3000:]}"
    commands = Commands(out)
    commands.ran.append({"args": args, "exit": done.returncode})
    commands.write()


def generate(out: Path, work: Path) -> None:
    """`mtrbench generate` on tests/data/native-mini from a fixed run, for the histories generation takes
    (the model ones through the scripted rewriter), and with --oracle and summary:llm; the generator fails on
    one turn of five (c1_5), within the default --max-failure-rate."""
    commands = Commands(out)
    run = out / "run" / "mini.run.trec"
    run.parent.mkdir(parents=True)
    run.write_text(NATIVE_MINI_RUN, encoding="utf-8")
    with ScriptedChatServer(ScriptedModel()) as server:
        base = ["generate", "--task", str(NATIVE_MINI), "--model", "gen-model", "--base-url", server.base_url]
        llm = [*LLM_FLAGS, "--api-key-env", KEY_ENV, "--concurrency", "1", "--rewriter-base-url", server.base_url]
        for history in ("full", "last-response", "rewrite", "rewrite:llm"):
            commands(*base, "--run", str(run), "--top-k", "2", "--history", history, *llm, "--rewriter-model", "rw")
        oracle = ["--oracle", "--output", str(out / "oracle" / "summary.generations.jsonl")]
        commands(*base, *oracle, "--history", "summary:llm", *llm, "--rewriter-model", "sum-model")
    commands.write()


def judge(out: Path, work: Path) -> None:
    """`mtrbench judge run` (rating; verdict with RAGAlign over a fixed run) on tests/data/generations-sample.jsonl,
    `judge rad-bench --answers` on the RAD-Bench fixture, all with a scripted judge that cannot read one
    prompt in eleven; and `judge rad-bench --judgments` (no model) on the fixture's released judgments."""
    commands = Commands(out)
    out.mkdir(parents=True, exist_ok=True)
    run = out / "sample.run.trec"
    run.write_text(SAMPLE_RUN, encoding="utf-8")
    with ScriptedChatServer(ScriptedModel()) as server:
        judge_ = {"name": "j", "model": "judge-m", "base_url": server.base_url, "api_key_env": KEY_ENV}
        judge_.update({"parse_retries": 1, "max_retries": 0, "concurrency": 1, "timeout_s": 20})
        judges = out / "judges.json"
        judges.write_text(json.dumps({"judges": [judge_]}), encoding="utf-8")
        base = ["judge", "run", str(GENERATIONS), "--task", "mtrbench-sample", "--judges", str(judges), *LLM_FLAGS]
        assert commands(*base, "--judge", "rating", "--output-dir", str(out / "rating")) == 0
        ragalign = ["--ragalign", "RAGAlign@1,RAGAlign@2(of=nDCG)", "--run", str(run)]
        assert commands(*base, "--judge", "verdict", *ragalign, "--output-dir", str(out / "verdict")) == 0
        rad = ["judge", "rad-bench", "--answers", str(RAD_BENCH), "--judges", str(judges), *LLM_FLAGS]
        assert commands(*rad, "--output-dir", str(out / "rad-bench")) == 0
    released = RAD_BENCH / "model_judgment" / "gpt-4o.jsonl"
    table = ["--output", str(out / "rad-bench-released.json")]
    assert commands("judge", "rad-bench", "--judgments", str(released), *table) == 0
    commands.write()


@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[Path, Path], None]  # (out: the compared results, work: scratch space)
    inputs: tuple[str, ...] = ()  # files under out that the scenario writes itself: not compared


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("eval-bm25", eval_bm25),
        Scenario("eval-bm25-model-histories", eval_bm25_model_histories),
        Scenario("eval-minilm", eval_minilm),
        Scenario("generate", generate, inputs=("run/mini.run.trec",)),
        Scenario("judge", judge, inputs=("sample.run.trec", "judges.json")),
    )
}


def run_scenario(scenario: Scenario, root: Path) -> Path:
    """Run ``scenario`` with its results in ``root/<name>`` (returned) and its scratch in ``root/<name>.work``."""
    out, work = root / scenario.name, root / f"{scenario.name}.work"
    work.mkdir(parents=True)
    previous = os.environ.get(KEY_ENV)
    os.environ[KEY_ENV] = "sk-golden-test-key"  # the scripted server accepts any key; one must be set
    try:
        scenario.run(out, work)
    finally:
        if previous is None:
            del os.environ[KEY_ENV]
        else:
            os.environ[KEY_ENV] = previous
    return out
