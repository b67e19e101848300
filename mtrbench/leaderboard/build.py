"""Build a leaderboard: entries -> comparability groups, per-task ranks, cross-task averages.

Grouping, in order:
1. entries split by comparability (label, history strategy, truncation, query format, paper table);
   a run whose retriever has no token limit (BM25) joins every group that matches it otherwise,
   since no truncation policy changes its scores;
2. within that, a task evaluated on several (split, dataset revision) variants puts each variant in
   its own group (the most common variant in the first);
3. per task: ranks by the task's main score (1 = best; ties share the better rank, then a gap);
   across tasks: for each system (model, revision, remaining settings) that has every task of the
   group, the mean of every metric all its entries carry, like MTR-SUITE Table 3's "Average" columns.
Every reason for keeping entries apart becomes one sentence in ``separations``.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtrbench import __version__
from mtrbench.infra.atomic import atomic_write_text
from mtrbench.infra.errors import MtrbenchError
from mtrbench.infra.numeric import json_text
from mtrbench.leaderboard.entries import (
    EntryLike,
    LeaderboardEntry,
    SourcedEntry,
    as_entry,
    load_leaderboard_entries,
    load_result_entry,
)
from mtrbench.leaderboard.keys import (
    comparability,
    flatten,
    identity,
    system_identity,
    system_settings,
    truncation_free,
)
from mtrbench.leaderboard.schema import resolve, validate
from mtrbench.results.documents import find_inputs
from mtrbench.results.labels import canonical, short_model
from mtrbench.results.writer import safe_name

REASON_NAMES = {
    "label": "label",
    "history": "history strategy",
    "truncate": "truncation",
    "query_format": "query format",
    "reported_in": "source table",
    "limit": "conversation limit",
    "protocol": "scoring protocol",
    "queries_left_out": "queries left out (rewriter failures)",
    "top_k": "retrieval depth",
    "relevance_level": "relevance level",
}


@dataclass
class BuildReport:
    warnings: list[str] = field(default_factory=list)
    n_results: int = 0
    n_leaderboards: int = 0
    n_skipped: int = 0


# ---------------------------------------------------------------- duplicates and ids


def _date_order(sourced: SourcedEntry) -> str:
    return sourced.entry.date or ""


def same_scores(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    """Equal metric sets with equal values; 1e-12 absorbs only the last bit of a float round trip."""
    return a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-12 for k in a)


def deduplicate(entries: list[SourcedEntry], keep_newest: bool, report: BuildReport) -> list[SourcedEntry]:
    """One entry per identity. The same result reached twice (same scores and date) is kept once silently;
    different results with one identity are an error naming both files, or with ``keep_newest`` the newer wins."""
    kept: dict[str, SourcedEntry] = {}
    for sourced in entries:
        key = identity(sourced.entry)
        previous = kept.get(key)
        if previous is None:
            kept[key] = sourced
            continue
        a, b = previous.entry, sourced.entry
        what = f"{a.model} on {a.task} (history {a.history})"
        if same_scores(a.scores, b.scores):
            # the same result reached twice, or a re-run that reproduced it: one entry, the newer one
            if _date_order(sourced) > _date_order(previous):
                kept[key] = sourced
            if a.date != b.date:
                report.warnings.append(
                    f"{what}: {previous.origin} and {sourced.origin} have identical scores "
                    f"(a re-run); kept once, dated {kept[key].entry.date}"
                )
            continue
        if not keep_newest:
            differing = sorted(k for k in set(a.scores) | set(b.scores) if a.scores.get(k) != b.scores.get(k))
            raise MtrbenchError(
                f"conflicting entries for {what} with the same settings: {previous.origin} and "
                f"{sourced.origin} differ in {len(differing)} score(s) (e.g. {differing[0]}: "
                f"{a.scores.get(differing[0])} vs {b.scores.get(differing[0])}); remove one, "
                f"or pass --keep-newest to keep the newer one"
            )
        newer, older = (sourced, previous) if _date_order(sourced) >= _date_order(previous) else (previous, sourced)
        kept[key] = newer
        report.warnings.append(
            f"duplicate {what}: kept {newer.origin} (date {newer.entry.date}), "
            f"dropped {older.origin} (date {older.entry.date})"
        )
    return list(kept.values())


def assign_unique_ids(entries: Sequence[LeaderboardEntry]) -> list[LeaderboardEntry]:
    """Ids stay as they are unless two entries share one; then the later ones get a suffix from their identity."""
    taken: set[str] = set()
    unique = []
    for entry in entries:
        base = entry.id
        if base in taken:
            experiment = entry.experiment or ""
            suffix = hashlib.sha256(identity(entry).encode()).hexdigest()[:8]
            candidate = (
                f"{base}__{experiment}" if experiment and f"{base}__{experiment}" not in taken else f"{base}__{suffix}"
            )
            entry = entry.with_id(safe_name(candidate))
        taken.add(entry.id)
        unique.append(entry)
    return unique


# ---------------------------------------------------------------- grouping


@dataclass
class Group:
    comparability: dict[str, Any]
    members: list[LeaderboardEntry] = field(default_factory=list)
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)


def _partition_by_comparability(entries: Sequence[LeaderboardEntry]) -> list[Group]:
    groups: dict[str, Group] = {}
    free: list[LeaderboardEntry] = []
    for entry in entries:
        if truncation_free(entry):
            free.append(entry)
            continue
        comp = comparability(entry)
        groups.setdefault(canonical(comp), Group(comp)).members.append(entry)
    for entry in free:
        comp = comparability(entry)
        without_truncation = {k: v for k, v in comp.items() if k != "truncate"}
        matches = [
            g
            for g in groups.values()
            if {k: v for k, v in g.comparability.items() if k != "truncate"} == without_truncation
        ]
        if not matches:
            comp = {**comp, "truncate": comp["truncate"] or "none"}
            matches = [groups.setdefault(canonical(comp), Group(comp))]
        for group in matches:
            group.members.append(entry)
    return list(groups.values())


def _split_by_dataset(group: Group) -> list[Group]:
    by_task: dict[str, list[LeaderboardEntry]] = {}
    for entry in group.members:
        by_task.setdefault(entry.task, []).append(entry)
    layers: list[Group] = []
    for task, task_entries in by_task.items():
        counts = Counter((e.split, e.dataset_revision) for e in task_entries)
        newest = {v: max((e.date or "") for e in task_entries if (e.split, e.dataset_revision) == v) for v in counts}
        variants = sorted(counts, key=str)
        variants.sort(key=lambda v: newest[v], reverse=True)
        variants.sort(key=lambda v: -counts[v])  # stable sorts: most entries, then newest, then name
        for layer, variant in enumerate(variants):
            while len(layers) <= layer:
                layers.append(Group(dict(group.comparability)))
            layers[layer].datasets[task] = {"split": variant[0], "dataset_revision": variant[1]}
            layers[layer].members.extend(e for e in task_entries if (e.split, e.dataset_revision) == variant)
    return layers


def competition_ranks(values: dict[str, float], digits: int = 12) -> dict[str, int]:
    """Rank 1 = highest; equal values (to ``digits`` decimals) share the better rank, the next rank skips."""
    ordered = sorted(values, key=lambda k: -values[k])
    ranks: dict[str, int] = {}
    previous = None
    for position, key in enumerate(ordered, 1):
        rounded = round(values[key], digits)
        if rounded != previous:
            rank, previous = position, rounded
        ranks[key] = rank
    return ranks


def _main_score_of(task_entries: list[LeaderboardEntry]) -> str:
    counts = Counter(e.main_score for e in task_entries)
    return sorted(counts, key=lambda k: (-counts[k], k))[0]


def _system_names(members: list[LeaderboardEntry]) -> dict[str, str]:
    """system identity -> a readable, unique name: the model, plus what tells same-model systems apart."""
    systems: dict[str, LeaderboardEntry] = {}
    for entry in members:
        systems.setdefault(system_identity(entry), entry)
    by_model: dict[str, list[str]] = {}
    for key, entry in systems.items():
        by_model.setdefault(entry.model, []).append(key)
    names: dict[str, str] = {}
    for model, keys in by_model.items():
        if len(keys) == 1:
            names[keys[0]] = model
            continue
        flat = {k: flatten({"revision": systems[k].model_revision, **system_settings(systems[k])}) for k in keys}
        differing = sorted(
            {name for k in keys for name, v in flat[k].items() if any(flat[o].get(name) != v for o in keys)}
        )
        for k in keys:
            detail = ", ".join(f"{name}={flat[k].get(name)}" for name in differing)
            names[k] = f"{model} [{detail}]"
    counts = Counter(names.values())
    for key, name in names.items():
        if counts[name] > 1:  # settings that differ only by being recorded or not: fall back on a digest
            names[key] = f"{name} #{hashlib.sha256(key.encode()).hexdigest()[:6]}"
    return names


def _finish_group(group: Group, group_id: str, separations: list[str]) -> dict[str, Any]:
    tasks = list(dict.fromkeys(e.task for e in group.members))
    main_scores, ranks = {}, {}
    for task in tasks:
        task_entries = [e for e in group.members if e.task == task]
        main = main_scores[task] = _main_score_of(task_entries)
        ranks[task] = competition_ranks({e.id: e.scores[main] for e in task_entries if main in e.scores})
    names = _system_names(group.members)
    systems: dict[str, dict[str, Any]] = {}
    for entry in group.members:
        name = names[system_identity(entry)]
        system = systems.setdefault(
            name,
            {
                "model": entry.model,
                "model_revision": entry.model_revision,
                "settings": system_settings(entry),
                "entries": {},
            },
        )
        system["entries"][entry.task] = entry.id
    averages: dict[str, dict[str, float]] = {}
    average_over = tasks if len(tasks) >= 2 else []
    if average_over:
        by_id = {e.id: e for e in group.members}
        for name, system in systems.items():
            missing = [t for t in tasks if t not in system["entries"]]
            if missing:
                separations.append(
                    f"{name} in {group_id}: not averaged, no result for {', '.join(missing)} "
                    f"(averages need every task of the group: {', '.join(tasks)})."
                )
                continue
            entries = [by_id[system["entries"][t]] for t in tasks]
            shared = [k for k in entries[0].scores if all(k in e.scores for e in entries)]
            averages[name] = {k: sum(e.scores[k] for e in entries) / len(entries) for k in shared}
    return {
        "id": group_id,
        "comparability": {**group.comparability, "datasets": group.datasets},
        "tasks": tasks,
        "entries": [e.id for e in group.members],
        "main_scores": main_scores,
        "ranks": ranks,
        "average_over": average_over,
        "averages": averages,
        "systems": systems,
    }


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v!r}" for k, v in value.items())
    return "unknown" if value is None else str(value)


def _separation(a: dict[str, Any], b: dict[str, Any], members: dict[str, list[LeaderboardEntry]]) -> str | None:
    ca, cb = a["comparability"], b["comparability"]
    reasons = []
    for key, name in REASON_NAMES.items():
        if ca.get(key) != cb.get(key):
            if key == "label":
                reasons.append(f"label differs ({ca[key]} vs {cb[key]}): reported numbers are never ranked with runs")
            else:
                reasons.append(f"{name} differs ({_describe(ca.get(key))} vs {_describe(cb.get(key))})")
    for task in a["tasks"]:
        if task in b["tasks"]:
            da, db = ca["datasets"][task], cb["datasets"][task]
            for key, name in (("dataset_revision", "dataset revision"), ("split", "split")):
                if da[key] != db[key]:
                    reasons.append(f"{name} of {task} differs ({_describe(da[key])} vs {_describe(db[key])})")
    if not reasons:
        return None
    ea, eb = members[a["id"]], members[b["id"]]
    shared_models = [e.model for e in ea if any(o.model == e.model for o in eb)]
    shared_tasks = [t for t in a["tasks"] if t in b["tasks"]]
    if not shared_models and not shared_tasks:
        return None  # nothing these groups could have been compared on
    model_a = short_model(shared_models[0] if shared_models else ea[0].model)
    model_b = short_model(shared_models[0] if shared_models else eb[0].model)
    task = shared_tasks[0] if shared_tasks else ea[0].task
    return (
        f"{model_a} ({a['id']}) vs {model_b} ({b['id']}) on {task}: "
        + "; ".join(reasons)
        + "; not ranked or averaged together."
    )


def group_entries(entries: Sequence[EntryLike]) -> tuple[list[dict[str, Any]], list[str]]:
    """(groups, separations) for entries with unique ids (typed, or as read from a leaderboard file)."""
    typed = [as_entry(e) for e in entries]
    layers = [layer for group in _partition_by_comparability(typed) for layer in _split_by_dataset(group)]
    position = {e.id: n for n, e in enumerate(typed)}
    layers.sort(key=lambda g: min(position[e.id] for e in g.members))
    separations: list[str] = []
    groups = [_finish_group(layer, f"g{n}", separations) for n, layer in enumerate(layers, 1)]
    members = {g["id"]: layer.members for g, layer in zip(groups, layers)}
    pair_sentences = []
    for i, a in enumerate(groups):
        for b in groups[i + 1 :]:
            sentence = _separation(a, b, members)
            if sentence:
                pair_sentences.append(sentence)
    return groups, pair_sentences + separations


# ---------------------------------------------------------------- the whole file


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def build_document(
    sourced: list[SourcedEntry],
    *,
    name: str,
    description: str,
    keep_newest: bool = False,
    report: BuildReport | None = None,
) -> dict[str, Any]:
    report = report or BuildReport()
    entries = assign_unique_ids([s.entry for s in deduplicate(sourced, keep_newest, report)])
    groups, separations = group_entries(entries)
    document = {
        "schema_version": 1,
        "name": name,
        "description": description,
        "created": utc_now(),
        "generator": f"mtrbench {__version__}",
        "entries": [e.to_json() for e in entries],
        "groups": groups,
        "separations": separations,
    }
    validate(document, f"leaderboard '{name}' (built)")
    return document


def collect(paths: list[str | Path], report: BuildReport) -> list[SourcedEntry]:
    """Entries from result files/folders and leaderboards; a bare NAME that is no path means a shipped leaderboard."""
    paths = [
        resolve(str(p)) if not Path(p).exists() and Path(p).suffix == "" and "/" not in str(p) else p for p in paths
    ]
    inputs = find_inputs(paths)
    report.n_results, report.n_leaderboards, report.n_skipped = (
        len(inputs.results),
        len(inputs.leaderboards),
        len(inputs.skipped),
    )
    sourced = [load_result_entry(p) for p in inputs.results]
    for path in inputs.leaderboards:
        sourced.extend(load_leaderboard_entries(path))
    if not sourced:
        raise MtrbenchError(f"no mtrbench result or leaderboard entry found in {', '.join(map(str, paths))}")
    return sourced


def write_document(document: dict[str, Any], output: Path) -> None:
    atomic_write_text(output, json_text(document, path=output, indent=2, ensure_ascii=False) + "\n")
