"""The settings a result records (``mtrbench.settings`` in its JSON), typed, and what makes two results the same.

Every field is declared (in its dataclass metadata) as **identity**, what decides the scores, or **execution**, how
the run went. Two results of one model, revision and task (they decide the result's place, see
``results/writer.py``) whose identities are equal are the same result: a finished one is not evaluated again
(``results/overwrite.py``) and two leaderboard entries of them are duplicates (``leaderboard/keys.py``).

Two recorded blocks mix both kinds, so their parts are declared too:

* ``retriever``, the retriever's own settings (one layout per kind): device, batch size, token budget, packing,
  the embedding cache and how exact search ran change speed or memory, never a score; the child count of
  parent-child retrieval is what the corpus decided once indexed (its chunking spec stays identity). These keys
  are left out at every depth (hybrid legs, the children retriever).
* ``rewriter``, who wrote a model-backed or Python history's texts (kind, model, endpoint, prompt hash, name,
  temperature); the request, cache and failure counts of the run (``rewriter_run``) are execution, recorded in
  the same JSON object.

Timings, hardware, the command and the date are recorded beside the settings block, never in it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields, replace
from typing import Any

from mtrbench.results.writer import experiment_slug

ROLE = "role"
IDENTITY = "identity"
EXECUTION = "execution"
EXECUTION_KEYS = "execution_keys"  # keys of an identity block that are execution, at any depth

# Retriever settings that change speed or memory, never a score (the leaderboard's identity ignores them too).
RETRIEVER_EXECUTION_KEYS = (
    "device",
    "batch_size",
    "token_budget",
    "packed",
    "engine_mode",
    "embedding_cache",
    "search_execution",
)
# What the corpus decides once indexed (the child count of parent-child retrieval: the chunking spec is kept).
RETRIEVER_CORPUS_KEYS = ("children",)
# Who wrote a model-backed (rewrite:llm, summary:llm) or Python history's texts; every other key is the run's.
REWRITER_IDENTITY_KEYS = ("kind", "model", "base_url", "prompt_hash", "name", "temperature")
DEFAULT_PROTOCOL = "trec_eval"  # what a result written before protocols were recorded was scored with
# Retriever kinds (``settings()["kind"]``) that name their results' folder (``kind=<kind>``): a checkpoint loaded as
# one of them never shares a folder with the same checkpoint loaded as a dense model (``--model-kind``). Dense models,
# BM25 ("sparse" in its settings since before learned sparse models), dual encoders and hybrids keep their folders.
FOLDER_KINDS = {"learned-sparse": "sparse", "multi-vector": "multi-vector"}


def _identity(**nested: tuple[str, ...]) -> Any:
    return field(default=None, metadata={ROLE: IDENTITY, **nested})


def _execution() -> Any:
    return field(default=None, metadata={ROLE: EXECUTION})


def without_keys(value: Any, keys: tuple[str, ...], *, nested: bool = True) -> Any:
    """``value`` without ``keys`` in it, in nested objects too unless ``nested`` is false (lists are kept as is)."""
    if not isinstance(value, Mapping):
        return value
    return {k: (without_keys(v, keys) if nested else v) for k, v in value.items() if k not in keys}


@dataclass(frozen=True)
class ResultSettings:
    """What ``mtrbench eval`` records in ``mtrbench.settings``, in the JSON's key order.

    None means not recorded. ``other`` keeps what this version does not know (from an older or newer mtrbench, or a
    known key recorded as null), as recorded; it counts as identity, since nothing says it does not change scores.
    """

    history: str | None = _identity()
    truncate: str | None = _identity()  # the policy applied: "none" where the retriever has no token limit
    query_format: Mapping[str, Any] | None = _identity()
    ptkb: str | None = _identity()  # --ptkb (TREC iKAT's personal statements); None: none, never recorded
    top_k: int | None = _identity()
    k_values: tuple[int, ...] | None = _identity()
    metrics: tuple[str, ...] | None = _identity()
    split: str | None = _identity()
    relevance_level: int | None = _identity()
    protocol: str | None = _identity()  # None: written before protocols were recorded, scored by trec_eval
    retriever: Mapping[str, Any] | None = _identity(
        **{EXECUTION_KEYS: RETRIEVER_EXECUTION_KEYS + RETRIEVER_CORPUS_KEYS}
    )
    pipeline: Mapping[str, Any] | None = _identity()  # what a hybrid or reranking pipeline adds to the folder name
    limit: int | None = _identity()  # the first N conversations only (JSON: {"conversations": N})
    rewriter: Mapping[str, Any] | None = _identity()  # REWRITER_IDENTITY_KEYS of the "rewriter" object
    rewriter_run: Mapping[str, Any] | None = _execution()  # the rest of it: requests, cache hits, failures, cost
    other: Mapping[str, Any] = field(default_factory=dict, metadata={ROLE: IDENTITY})

    # -- JSON ------------------------------------------------------------------------------------------
    @classmethod
    def from_json(cls, settings: Mapping[str, Any]) -> ResultSettings:
        """Any recorded settings block, from the first mtrbench on; missing keys read as not recorded."""
        known = {f.name for f in fields(cls)} - {"rewriter_run", "other"}
        values: dict[str, Any] = {}
        other: dict[str, Any] = {}
        for key, value in settings.items():
            if key not in known or value is None:  # a null stays as recorded: it compares unlike a missing key
                other[key] = value
            elif key in ("k_values", "metrics") and isinstance(value, list):
                values[key] = tuple(value)
            elif key == "limit":
                if _is_limit(value):
                    values[key] = value["conversations"]
                else:
                    other[key] = value
            elif key == "rewriter" and isinstance(value, Mapping):
                values["rewriter"] = {k: v for k, v in value.items() if k in REWRITER_IDENTITY_KEYS}
                values["rewriter_run"] = {k: v for k, v in value.items() if k not in REWRITER_IDENTITY_KEYS}
            else:
                values[key] = value
        return cls(**values, other=other)

    def to_json(self) -> dict[str, Any]:
        """The settings block as ``eval`` writes it (key order included)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or f.name in ("rewriter_run", "other"):
                continue
            if isinstance(value, tuple):
                value = list(value)
            elif f.name == "limit":
                value = {"conversations": value}
            elif f.name == "rewriter" and isinstance(value, Mapping):
                value = {**value, **(self.rewriter_run or {})}
            out[f.name] = value
        out.update(self.other)
        return out

    def __getitem__(self, key: str) -> Any:
        """A value as recorded in the JSON (``settings["protocol"]``), for code that reads the block by key."""
        return self.to_json()[key]

    # -- identity --------------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """The settings without execution, as JSON values (tuples as lists): equal for the same result.
        A result recorded before protocols reads as ``trec_eval``."""
        cleared: dict[str, Any] = {"protocol": self.scoring_protocol} if self.protocol is None else {}
        for f in fields(self):
            if _role(f) == EXECUTION:
                cleared[f.name] = None
            elif EXECUTION_KEYS in f.metadata:
                cleared[f.name] = without_keys(getattr(self, f.name), f.metadata[EXECUTION_KEYS])
        return json.loads(json.dumps(replace(self, **cleared).to_json()))

    def execution(self) -> dict[str, Any]:
        """What :meth:`identity` leaves out, by dotted path (``retriever.dense.device``, ``rewriter.cached``)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if _role(f) == EXECUTION and isinstance(value, Mapping):
                out.update({f"rewriter.{k}": v for k, v in value.items()})
            elif EXECUTION_KEYS in f.metadata:
                out.update(_removed(value, f.metadata[EXECUTION_KEYS], f.name))
        return out

    def same_result(self, other: ResultSettings) -> bool:
        return self.identity() == other.identity()

    # -- reading ---------------------------------------------------------------------------------------
    @property
    def scoring_protocol(self) -> str:
        """``trec_eval`` or ``official:<benchmark>``; a result written before protocols were recorded: trec_eval."""
        return self.protocol or DEFAULT_PROTOCOL

    @property
    def rewriter_failures(self) -> int:
        """Requests the history's model failed on (their queries are left out of the scores); 0 when none."""
        failures = (self.rewriter_run or {}).get("failures")
        return failures if isinstance(failures, int) and not isinstance(failures, bool) else 0

    # -- a run -----------------------------------------------------------------------------------------
    def after_run(self, retriever: Mapping[str, Any], rewriter_report: Mapping[str, Any]) -> ResultSettings:
        """The settings as written: the retriever's as indexed (a parent-child child count) and the report of the
        history's model (requests, cache hits, failures); a history without a recorded rewriter ignores it."""
        if not isinstance(self.rewriter, Mapping):
            return replace(self, retriever=retriever)
        written = {**self.rewriter, **(self.rewriter_run or {}), **rewriter_report}
        return replace(
            self,
            retriever=retriever,
            rewriter={k: v for k, v in written.items() if k in REWRITER_IDENTITY_KEYS},
            rewriter_run={k: v for k, v in written.items() if k not in REWRITER_IDENTITY_KEYS},
        )

    def experiment_name(self, *, truncate: str, truncation_applies: bool, max_length: int | None) -> str | None:
        """The result's folder (and mteb task) name: empty for default settings, else a readable slug of what
        differs. Three things name it without being recorded here: the ``truncate`` policy asked for, whether the
        retriever has a tokenizer (``truncation_applies``), and ``max_length`` only when it was given."""
        pipeline = dict(self.pipeline or {})
        label = _rewriter_label(self.rewriter)
        if label:  # two rewriters must not share one result folder
            pipeline["rewriter"] = label
        if self.ptkb:  # a query with personal statements never shares a folder with one without
            pipeline["ptkb"] = self.ptkb
        if self.scoring_protocol != DEFAULT_PROTOCOL:  # never in the folder of a trec_eval result
            pipeline["protocol"] = "official"
        retriever = self.retriever if isinstance(self.retriever, Mapping) else {}
        return experiment_slug(
            history=self.history or "",
            truncate=truncate,
            truncation_applies=truncation_applies,
            fmt=dict(self.query_format or {}),
            max_length=max_length,
            dtype=retriever.get("dtype"),
            pipeline=pipeline or None,
            limit=self.limit,
            kind=folder_kind(retriever),
        )


def folder_kind(retriever: Mapping[str, Any]) -> str | None:
    """The kind a result's folder names (FOLDER_KINDS), of its first stage: a parent-child retriever's children."""
    kind = retriever.get("kind")
    children = retriever.get("children_retriever")
    if kind == "parent-child" and isinstance(children, Mapping):
        return folder_kind(children)
    return FOLDER_KINDS.get(kind) if isinstance(kind, str) else None


def _role(f: Field[Any]) -> str:
    return str(f.metadata.get(ROLE, IDENTITY))


def _is_limit(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and set(value) == {"conversations"}
        and isinstance(value["conversations"], int)
        and not isinstance(value["conversations"], bool)
    )


def _removed(value: Any, keys: tuple[str, ...], path: str) -> dict[str, Any]:
    """Dotted path -> value of every ``keys`` entry :func:`without_keys` drops from ``value``."""
    if not isinstance(value, Mapping):
        return {}
    out: dict[str, Any] = {}
    for k, v in value.items():
        if k in keys:
            out[f"{path}.{k}"] = v
        else:
            out.update(_removed(v, keys, f"{path}.{k}"))
    return out


def _rewriter_label(identity: Mapping[str, Any] | None) -> str | None:
    """The rewriter part of a result's folder name: its model, and its temperature when not 0 (two rewriters, or
    one at two temperatures, never share a folder)."""
    if not isinstance(identity, Mapping) or not identity:
        return None
    temperature = identity.get("temperature")
    model = identity.get("model")
    return f"{model}@t{temperature:g}" if temperature else model
