"""``run_synthesis``: the four stages in order over one work folder, each resuming from its own outputs.

Work folder::

    curate/   chunks.jsonl, summary.json
    cluster/  clusters.jsonl, summary.json
    generate/ conversations.log.jsonl, summary.json
    task/     the native task folder (see ``write.py``)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench.infra.errors import LLMError, UserInputError
from mtrbench.infra.reporting import report
from mtrbench.llm.cache import ResponseCache
from mtrbench.llm.failure_rate import DEFAULT_MAX_FAILURE_RATE, check_share, raise_if_over
from mtrbench.synthesize.cluster import ClusterOptions, read_clusters, run_cluster
from mtrbench.synthesize.curate import Chunk, CurateOptions, read_chunks, run_curate
from mtrbench.synthesize.generate import (
    LOG,
    Agents,
    GenerateOptions,
    GenerateReport,
    finished_conversations,
    plan_digest,
    run_generate,
)
from mtrbench.synthesize.stages import STAGES  # noqa: F401
from mtrbench.synthesize.write import WriteOptions, format_table2, write_task


@dataclass(frozen=True)
class SynthesisConfig:
    corpus: str
    out: Path
    stage: str = "all"  # one of STAGES, or all: every stage up to and including it runs (finished ones resume)
    curate: CurateOptions = field(default_factory=CurateOptions)
    cluster: ClusterOptions = field(default_factory=ClusterOptions)
    generate: GenerateOptions = field(default_factory=GenerateOptions)
    write: WriteOptions = field(default_factory=WriteOptions)
    show_progress: bool = True
    # past this share of dropped conversations the task is not written and the command exits 1
    max_failure_rate: float = DEFAULT_MAX_FAILURE_RATE


def run_synthesis(config: SynthesisConfig, agents: Agents | None, cache: ResponseCache | None = None) -> int:
    if config.stage not in (*STAGES, "all"):
        raise UserInputError(f"--stage must be one of {', '.join(STAGES)} or all, got '{config.stage}'")
    last = STAGES.index(config.stage) if config.stage != "all" else len(STAGES) - 1
    check_share(config.max_failure_rate)
    out = config.out
    curated = run_curate(config.corpus, out / "curate", config.curate, config.show_progress)
    report(_curate_lines(curated))
    if last == 0:
        return 0
    chunks = read_chunks(out / "curate")
    clustered = run_cluster(chunks, out / "cluster", config.cluster, curated["settings_digest"], config.show_progress)
    report(
        f"cluster: {clustered['clusters']} clusters of {config.cluster.cluster_size} from {clustered['path_length']} "
        f"chunks ({clustered['dropped_near_identical']} adjacent near-identical dropped, {clustered['jumps']} jumps)"
    )
    if last == 1:
        return 0
    if agents is None:
        raise UserInputError(
            "generation needs the agents' models: --questioner-model/--responder-model/"
            "--polisher-model (or --llm-model for all three) or --agents FILE"
        )
    clusters = read_clusters(out / "cluster")
    generated = run_generate(
        chunks,
        clusters,
        out / "generate",
        agents,
        config.generate,
        clustered["settings_digest"],
        cache,
        config.show_progress,
    )
    if generated is None:  # dry run
        return 0
    _check_generated(generated, out / "generate", config.max_failure_rate)
    if last == 2:
        return 0
    digest = plan_digest(agents, config.generate.plan, clustered["settings_digest"])
    _write(config, chunks, finished_conversations(out / "generate", digest), curated, clustered, generated)
    return 0


def _curate_lines(curated: dict[str, Any]) -> str:
    dropped = ", ".join(f"{n} {k}" for k, n in curated["dropped"].items()) or "none"
    lines = [
        f"curate: {curated['documents']} documents -> {curated['chunks']} chunks, kept {curated['kept']} "
        f"(dropped: {dropped}); quality: {curated['quality_scorer']}"
    ]
    return "\n".join(lines + [f"warning: {n} {warning}" for warning, n in curated.get("warnings", {}).items()])


def _check_generated(generated: GenerateReport, folder: Path, max_failure_rate: float) -> None:
    """Report the generation; past --max-failure-rate of dropped conversations, stop before the task is written."""
    dropped_text = ", ".join(f"{n} {k}" for k, n in generated.dropped.items()) or "none"
    report(
        f"generate: {generated.finished} of {generated.planned} conversations finished, dropped: {dropped_text}; "
        f"{generated.requests_sent} requests this run, ~${generated.spent_usd:.4f}"
    )
    if generated.failures is not None:
        raise_if_over(
            [generated.failures],
            max_failure_rate,
            f"finished conversations are kept in {folder / LOG} and the task is not written; a "
            "re-run continues from the log",
        )


def _write(
    config: SynthesisConfig,
    chunks: list[Chunk],
    records: list[dict[str, Any]],
    curated: dict[str, Any],
    clustered: dict[str, Any],
    generated: GenerateReport,
) -> None:
    out = config.out
    if not records:
        raise LLMError(
            "no finished conversation to write (every one was dropped: see "
            f"{out / 'generate' / 'conversations.log.jsonl'})"
        )
    summary = {
        "quality_scorer": curated["quality_scorer"],
        "minhash": curated["minhash"],
        "curate_dropped": curated["dropped"],
        "clusters": clustered["clusters"],
        "conversations_dropped": dict(generated.dropped),
    }
    stats = write_task(chunks, records, out / "task", config.write, summary)
    report(f"write: {out / 'task'} (card {out / 'task' / (config.write.name + '.yaml')})")
    report("Table 2 statistics (tokens: MiniLM WordPiece):")
    report(format_table2(stats))
