"""mtrbench tasks as mteb retrieval tasks: ``mteb.evaluate(model, mtrbench.interop.mteb.get_tasks([...]))``.

mteb sees plain retrieval tasks: a corpus, one text per query, qrels. The conversation-to-text step
happens here, with mtrbench's history strategies and its left truncation, so that the question
being asked is never cut off: the texts reach mteb already fitting the model's token limit, and
the encoder's own right-truncation (which would cut the newest text, the question included) never
fires. Truncation must know the encoder's tokenizer, its max length and the query prompt it
prepends, so ``get_tasks`` takes the model (or those three explicitly); mteb keeps adding the
prompt itself, exactly as ``mtrbench eval`` does, and the budget leaves room for it.

Scores come from mteb's own evaluator (pytrec_eval, like mtrbench); queries without a positive
judgment are left out and counted, as ``mtrbench eval`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, get_args

from mtrbench.infra.errors import MtrbenchError
from mtrbench.retrieve import RetrieverOptions, build_retriever


class MtebMissingError(MtrbenchError, ImportError):
    """mteb is an optional extra; also an ImportError so ``except ImportError`` guards keep working."""


try:
    import mteb  # noqa: F401  (the real package: absolute imports skip this module)
    from datasets import Dataset
    from mteb.abstasks import AbsTaskRetrieval
    from mteb.abstasks.task_metadata import TaskDomain, TaskMetadata
    from mteb.types import Licenses
except ImportError as exc:
    raise MtebMissingError(f"mtrbench.interop.mteb needs mteb ({exc}): pip install 'mtrbench[mteb]'") from None
try:
    from mteb.timing import TimingStack
except ImportError:  # older mteb 2.x records no evaluation phases
    TimingStack = None

from mtrbench import __version__
from mtrbench.data import load_task, resolve_card
from mtrbench.data.cards import TaskCard
from mtrbench.data.model import TaskData
from mtrbench.measures import Measure, evaluate
from mtrbench.measures.protocols import check_choice
from mtrbench.measures.protocols import for_card as protocol_for_card
from mtrbench.results.writer import HF_SUBSET, dataset_revision_label, experiment_slug, mteb_language
from mtrbench.serialize.history import DEFAULT_HISTORY, QueryFormat, check_strategy_applies, get_strategy
from mtrbench.serialize.truncate import DEFAULT_TRUNCATE, SIDES, Truncator

__all__ = ["get_tasks", "query_budget", "MtrbenchRetrievalTask", "QueryBudget"]

# Card domains outside mteb's vocabulary, mapped to its nearest domain; others are dropped.
_DOMAIN_ALIASES = {"finance": "Financial", "forum": "Social", "synthetic": "Constructed", "technical": "Engineering"}
_BINARY_FAMILIES = ("recall", "mrr", "map", "precision", "hit")


@dataclass(frozen=True)
class QueryBudget:
    """What left truncation needs to know about the encoder that will read the queries."""

    tokenizer: Any | None
    max_length: int | None
    query_prompt: str = ""


@dataclass(frozen=True)
class Serialization:
    history: str
    truncate: str
    fmt: QueryFormat
    budget: QueryBudget
    max_length_set: bool
    prefix_first_turn: bool = False  # the official MTR-SUITE serialization: a first turn reads "User: q"

    def slug(self) -> str | None:
        """Empty for mtrbench's defaults; else the same slug as mtrbench's experiment folders (``protocol=official``
        where the official protocol changes the texts: mteb's cache must not mix the two)."""
        return experiment_slug(
            history=self.history,
            truncate=self.truncate,
            truncation_applies=self.budget.tokenizer is not None,
            fmt=asdict(self.fmt),
            max_length=self.budget.max_length if self.max_length_set else None,
            pipeline={"protocol": "official"} if self.prefix_first_turn else None,
        )


class MtrbenchRetrievalTask(AbsTaskRetrieval):
    """An mtrbench task as an mteb retrieval task. ``get_tasks`` makes one subclass per task and settings
    (so mteb can re-instantiate it from its class); after loading, ``excluded_without_positives`` and
    ``truncation`` hold the per-split counts ``mtrbench eval`` writes into its results."""

    card: ClassVar[TaskCard]
    serialization: ClassVar[Serialization]
    data_dir: ClassVar[str | None] = None
    corpus_path: ClassVar[str | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.excluded_without_positives: dict[str, int] = {}
        self.truncation: dict[str, dict[str, Any]] = {}

    def load_data(self, num_proc: int | None = None, *, timer: Any = None, **kwargs: Any) -> None:
        if self.data_loaded:
            return
        phase = timer or (TimingStack() if TimingStack else None)
        self.dataset = {HF_SUBSET: {}}
        for split in self.eval_splits:
            with phase("Data loading", split=split) if phase else nullcontext():
                data = load_task(self.card, split=split, data_dir=self.data_dir, corpus_path=self.corpus_path)
            self.metadata.dataset["revision"] = dataset_revision_label(data.dataset_revision)
            with phase("Serializing conversations", split=split) if phase else nullcontext():
                self.dataset[HF_SUBSET][split] = self._split_data(data)
        self.data_loaded = True

    def _split_data(self, data: TaskData) -> dict[str, Any]:
        settings = self.serialization
        strategy = get_strategy(settings.history)
        if settings.prefix_first_turn:
            strategy = strategy.with_first_turn_prefixed()
        check_strategy_applies(strategy, data.name, data.has_rewrites)
        budget = settings.budget
        truncator = Truncator(budget.tokenizer, budget.max_length, prompt=budget.query_prompt, side=settings.truncate)
        # Every query is serialized, as mtrbench eval does, so the truncation counts cover the same queries.
        texts = [truncator(strategy(q, settings.fmt)) for q in data.queries]
        kept = [n for n, q in enumerate(data.queries) if q.has_positive]
        self.excluded_without_positives[data.split] = len(data.queries) - len(kept)
        self.truncation[data.split] = truncator.stats.as_dict()
        queries = [data.queries[n] for n in kept]
        corpus = Dataset.from_dict({"id": data.corpus.ids, "title": data.corpus.titles, "text": data.corpus.texts})
        top_ranked = None
        if any(q.candidate_doc_ids is not None for q in queries):
            top_ranked = {
                q.qid: list(q.candidate_doc_ids if q.candidate_doc_ids is not None else data.corpus.ids)
                for q in queries
            }
        return {
            "corpus": corpus,
            "queries": Dataset.from_dict({"id": [q.qid for q in queries], "text": [texts[n] for n in kept]}),
            "relevant_docs": {q.qid: dict(q.qrels) for q in queries},
            "top_ranked": top_ranked,
        }

    def task_specific_scores(
        self,
        scores: dict[str, dict[str, float]],
        qrels: dict[str, dict[str, int]],
        results: dict[str, dict[str, float]],
        hf_split: str,
        hf_subset: str,
    ) -> dict[str, float]:
        """mteb scores binary measures at relevance level 1; a task judged at another level (TREC CAsT: 2)
        gets them recomputed at its level by mtrbench's pytrec_eval wrapper (nDCG, graded, is unaffected)."""
        if self.card.relevance_level == 1:
            return {}
        level = self.card.relevance_level
        measures = [Measure(f, k) for f in _BINARY_FAMILIES for k in self.k_values]
        means = evaluate(qrels, results, measures, relevance_level=level).scores()
        return {m.key(level): means[m.key(level)] for m in measures}


def get_tasks(
    names: str | Iterable[str],
    *,
    history: str | Sequence[str] = DEFAULT_HISTORY,
    truncate: str = DEFAULT_TRUNCATE,
    model: Any = None,
    tokenizer: Any = None,
    max_length: int | None = None,
    query_prompt: str | None = None,
    query_format: QueryFormat | Mapping[str, str] | None = None,
    split: str | None = None,
    data_dir: str | None = None,
    corpus_path: str | None = None,
    protocol: str | None = None,
) -> list[MtrbenchRetrievalTask]:
    """mtrbench tasks as mteb retrieval tasks, one per (task, history strategy).

    ``names``: task names, task card YAML files or data folders, as ``mtrbench eval --task`` takes.
    ``history``: a strategy (``full``, ``current``, ``window:K``, ...), a comma list or a list of them.
    ``truncate``: ``left`` (keep the question, drop the oldest history), ``right`` or ``none``.
    ``model``: the encoder mteb will run: a SentenceTransformer, an mteb wrapper around one, or an
    mtrbench model name (``minilm``, an HF id, a folder; loaded on CPU to read its tokenizer, max
    length and query prompt, as ``mtrbench eval`` applies them). ``tokenizer``, ``max_length`` and
    ``query_prompt`` set or override those three. ``query_format``: role prefixes, separator, order.
    Task names are mtrbench's for its default settings; other settings append the same slug as
    mtrbench's experiment folders (``mtrbench-sample__history=questions``), so mteb's result cache
    never hands back a score made with another serialization.
    ``protocol``: ``official`` or ``trec_eval`` (None: each card's default), as ``mtrbench eval --protocol``; only
    its serialization applies here (MTR-SUITE's official texts write a first turn as ``User: q``): mteb scores with
    its own evaluator, i.e. trec_eval's conventions, never MTRAG's or BRIDGE's official ones.
    """
    names = [names] if isinstance(names, str) else list(names)
    histories = [h.strip() for h in (history.split(",") if isinstance(history, str) else history) if h.strip()]
    if not names or not histories:
        raise MtrbenchError("get_tasks needs at least one task name and one history strategy")
    for spec in histories:
        get_strategy(spec)  # unknown names fail before any model or data loads
    if truncate not in SIDES:
        raise MtrbenchError(f"truncate must be one of {', '.join(SIDES)}, got '{truncate}'")
    fmt = query_format if isinstance(query_format, QueryFormat) else QueryFormat(**(query_format or {}))
    if protocol is not None:
        check_choice(protocol, "protocol=")
    cards = [resolve_card(name) for name in names]
    for card in cards:
        if card.type != "conversational-retrieval" and "retrieval" not in card.type:
            raise MtrbenchError(f"task '{card.name}' is a {card.type} task, not a retrieval task")
    budget = query_budget(
        model, tokenizer=tokenizer, max_length=max_length, query_prompt=query_prompt, truncate=truncate
    )
    side = truncate if budget.tokenizer is not None else "none"
    tasks = []
    for card in cards:
        eval_split = split or card.eval_split
        if eval_split not in card.splits:
            raise MtrbenchError(f"task '{card.name}' has no split '{eval_split}' (splits: {', '.join(card.splits)})")
        prefix = protocol_for_card(protocol, card).prefix_first_turn
        for spec in histories:
            settings = Serialization(get_strategy(spec).name, side, fmt, budget, max_length is not None, prefix)
            tasks.append(_task_class(card, settings, eval_split, data_dir, corpus_path)())
    return tasks


def query_budget(
    model: Any = None,
    *,
    tokenizer: Any = None,
    max_length: int | None = None,
    query_prompt: str | None = None,
    truncate: str = DEFAULT_TRUNCATE,
) -> QueryBudget:
    """Tokenizer, token limit and query prompt of the encoder, from ``model`` and/or explicit values."""
    found = QueryBudget(None, None, "")
    if isinstance(model, str):
        retriever = build_retriever(
            model, RetrieverOptions.of(device="cpu", max_length=max_length, show_progress=False)
        )
        found = QueryBudget(retriever.tokenizer, retriever.max_length, retriever.query_prompt or "")
    elif model is not None:
        encoder = model if hasattr(model, "max_seq_length") else getattr(model, "model", None)
        if encoder is None or not hasattr(encoder, "tokenizer") or not hasattr(encoder, "max_seq_length"):
            raise MtrbenchError(
                f"get_tasks: cannot read a tokenizer and max_seq_length from {type(model).__name__}; "
                f"pass tokenizer=, max_length= and query_prompt= instead"
            )
        prompts = getattr(model, "model_prompts", None) or getattr(encoder, "prompts", None) or {}
        if max_length is not None and max_length > encoder.max_seq_length:
            raise MtrbenchError(
                f"max_length {max_length} exceeds the model's max_seq_length {encoder.max_seq_length}: "
                f"the encoder would cut the question off; raise model.max_seq_length first"
            )
        found = QueryBudget(encoder.tokenizer, encoder.max_seq_length, prompts.get("query") or "")
    if isinstance(tokenizer, str):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(tokenizer)
    budget = QueryBudget(
        tokenizer if tokenizer is not None else found.tokenizer,
        max_length if max_length is not None else found.max_length,
        query_prompt if query_prompt is not None else found.query_prompt,
    )
    if truncate != "none" and budget.tokenizer is None and model is None:
        raise MtrbenchError(
            f"truncate='{truncate}' needs the encoder's tokenizer: pass model= (or tokenizer= and "
            f"max_length=), or truncate='none'"
        )
    if budget.tokenizer is not None and not budget.max_length:
        raise MtrbenchError("get_tasks: pass max_length= with tokenizer= (the encoder's token limit)")
    return budget


def _task_class(
    card: TaskCard, settings: Serialization, split: str, data_dir: str | None, corpus_path: str | None
) -> type[MtrbenchRetrievalTask]:
    slug = settings.slug()
    name = f"{card.name}__{slug}" if slug else card.name
    attrs = {
        "metadata": task_metadata(card, name, split, settings, data_dir),
        "card": card,
        "serialization": settings,
        "data_dir": data_dir,
        "corpus_path": corpus_path,
        "k_values": tuple(card.k_values),
    }
    return type(f"Mtrbench_{card.name}", (MtrbenchRetrievalTask,), attrs)


def task_metadata(
    card: TaskCard, name: str, split: str, settings: Serialization, data_dir: str | None = None
) -> TaskMetadata:
    local = data_dir or card.local_path()
    path = str(data_dir) if data_dir else (card.source.hub or str(card.local_path()))
    # The loaders record the Hub revision only for Hub data; load_data replaces this guess with theirs.
    revision = dataset_revision_label(None if local else card.source.revision)
    budget = settings.budget
    limit = (
        f", at most {budget.max_length} tokens with the query prompt {budget.query_prompt!r}"
        if settings.truncate != "none"
        else ""
    )
    description = (
        f"{card.description.strip()} Queries serialized by mtrbench {__version__}: "
        f"history={settings.history}, truncate={settings.truncate}{limit}."
    )
    license_ = (card.license or "").lower()
    return TaskMetadata(
        name=name,
        description=description,
        reference=card.reference if (card.reference or "").startswith(("http://", "https://")) else None,
        dataset={"path": path, "revision": revision},
        type="Retrieval",
        category="t2t",
        modalities=["text"],
        eval_splits=[split],
        eval_langs=[mteb_language(code) for code in card.languages],
        main_score=card.main_score,
        domains=_domains(card.domains),
        task_subtypes=["Conversational retrieval"],
        license=license_ if license_ in get_args(Licenses) else "not specified",
        bibtex_citation=card.citation or "",
    )


def _domains(domains: Iterable[str]) -> list[str]:
    known = {d.lower(): d for d in get_args(TaskDomain)}
    out = []
    for domain in domains:
        mapped = _DOMAIN_ALIASES.get(domain.lower()) or known.get(domain.lower())
        if mapped and mapped not in out:
            out.append(mapped)
    return out
