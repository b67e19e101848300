"""A measure is a value: a family plus its parameters, printed and parsed as a string.

``nDCG@10`` is ``Measure("ndcg", cutoff=10)``; ``R@100(rel=2)`` is ``Measure("recall", 100, rel=2)``.
A measure's result key follows mteb (``ndcg_at_10``) when it is computed at the task's declared
relevance level; asked for at another level it gets a key of its own (``recall_at_100_rel2``), so a
changed level can never hide under a familiar name.

The registry of families is here too, since a measure's printed name and result key come from its family:
families are discovered from the modules of :mod:`mtrbench.measures.families` (each defines ``FAMILY``), so
adding a measure is adding one module there. Installed packages add families through ``mtrbench.measures``
entry points (mtrbench.infra.plugins); those are read only when a name or result key is not a built-in one,
or when every family is listed.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

from mtrbench.formats.generations import Generation
from mtrbench.formats.qrels import Qrels
from mtrbench.formats.run import Run
from mtrbench.infra import plugins
from mtrbench.infra.errors import MtrbenchError, unknown_name

PerQuery = dict[str, float]  # qid -> value


@dataclass(frozen=True)
class Measure:
    family: str  # canonical family name, e.g. "ndcg"
    cutoff: int | None = None
    rel: int | None = None  # minimum grade binary measures count as relevant; None: the task's level
    params: tuple[tuple[str, str], ...] = ()  # family-specific extras, sorted by name

    def param(self, name: str, default: str | None = None) -> str | None:
        return dict(self.params).get(name, default)

    @property
    def spec(self) -> MeasureFamily:
        return family(self.family)

    def __str__(self) -> str:
        return self.spec.format(self)

    def key(self, task_level: int) -> str:
        """The result-file key when the task declares ``task_level``."""
        return self.spec.key(self, task_level)

    def at_level(self, task_level: int) -> Measure:
        """The same measure with the relevance level made explicit (families that use one)."""
        if self.spec.uses_relevance_level and self.rel is None:
            return Measure(self.family, self.cutoff, task_level, self.params)
        return self


@dataclass(frozen=True)
class MeasureInputs:
    """What measures are computed from. ``qrels`` holds the evaluated queries (those with a positive
    judgment); ``run`` has an entry, possibly empty, for each of them."""

    qrels: Qrels
    run: Run
    all_qrels: Qrels  # every judged query, with or without a positive judgment
    raw_run: Run  # the run as given, queries without judgments included
    task_level: int = 1
    generation: Mapping[str, int] | None = None  # qid -> 1/0 generation outcome (RAGAlign)
    generations: Mapping[str, Generation] | None = None  # qid -> generated answer (generation measures)
    references: Mapping[str, tuple[str, ...]] | None = None  # qid -> reference answers


@dataclass
class Computed:
    per_query: dict[Measure, PerQuery] = field(default_factory=dict)
    aggregate: dict[Measure, float] = field(default_factory=dict)
    details: dict[Measure, dict] = field(default_factory=dict)  # e.g. RAGAlign's n and p-value


class MeasureFamily(ABC):
    """One family of measures: how it is named, parsed, keyed and computed. One module each."""

    name: str  # canonical lower-case name, as in task cards' ``metrics`` lists
    label: str  # printed name: nDCG, Recall, ...
    aliases: tuple[str, ...] = ()  # other accepted spellings (matched case-insensitively)
    key_stem: str  # result-key stem: ``{key_stem}_at_{k}``
    definition: str  # one line
    citation: str
    uses_relevance_level: bool = False
    per_query: bool = True  # False: one value for the whole run (BEIR's Hole@k, RAGAlign)
    param_names: tuple[str, ...] = ()
    order: int = 100  # position in tables and listings
    takes_cutoff: bool = True  # False: generation measures, written without @k (BLEU-1, ROUGE-L)

    def names(self) -> tuple[str, ...]:
        return (self.name, self.label, *self.aliases)

    def check(self, measure: Measure, where: str) -> None:
        """Refuse parameters this family does not take."""
        if measure.cutoff is None:
            raise MtrbenchError(f"{where}: {self.label} needs a cutoff, e.g. {self.label}@10")
        if measure.cutoff < 1:
            raise MtrbenchError(f"{where}: the cutoff must be a positive integer")
        if measure.rel is not None and not self.uses_relevance_level:
            raise MtrbenchError(f"{where}: {self.label} takes no relevance level (it does not binarize grades)")
        if measure.rel is not None and measure.rel < 1:
            raise MtrbenchError(f"{where}: rel must be a positive integer")
        unknown = [n for n, _ in measure.params if n not in self.param_names]
        if unknown:
            raise MtrbenchError(
                f"{where}: {self.label} takes no parameter '{unknown[0]}'"
                + (f" (it takes: {', '.join(self.param_names)})" if self.param_names else "")
            )

    def defaults(self, measure: Measure) -> Measure:
        return measure

    def example(self) -> Measure:
        """The measure shown in listings (``mtrbench metrics``)."""
        return Measure(self.name, 10)

    def format(self, measure: Measure) -> str:
        text = self.label + (f"@{measure.cutoff}" if measure.cutoff is not None else "")
        params = ([("rel", str(measure.rel))] if measure.rel is not None else []) + list(measure.params)
        return text + (f"({','.join(f'{n}={v}' for n, v in params)})" if params else "")

    def key(self, measure: Measure, task_level: int) -> str:
        key = f"{self.key_stem}_at_{measure.cutoff}"
        if measure.rel is not None and measure.rel != task_level:
            key += f"_rel{measure.rel}"
        return key

    def key_pattern(self) -> re.Pattern:
        return re.compile(rf"{re.escape(self.key_stem)}_at_(?P<cutoff>[0-9]+)(?:_rel(?P<rel>[0-9]+))?")

    def from_key(self, match: re.Match) -> Measure:
        rel = match.group("rel")
        return Measure(self.name, int(match.group("cutoff")), int(rel) if rel else None)

    def requires(self, measure: Measure) -> Sequence[Measure]:
        """Measures whose per-query values this one is computed from."""
        return ()

    @abstractmethod
    def compute(self, measures: Sequence[Measure], inputs: MeasureInputs, computed: Computed) -> Computed:
        """Values for ``measures`` (all of this family, levels resolved); ``computed`` holds what
        :meth:`requires` asked for."""


# -- the registry of families -------------------------------------------------------------------------


@cache
def all_families() -> dict[str, MeasureFamily]:
    """Canonical name -> family, in the order results are shown: the built-in ones, then the plugins'."""
    return {**builtin_families(), **plugin_families()}


@cache
def builtin_families() -> dict[str, MeasureFamily]:
    """Canonical name -> family, for the families mtrbench defines."""
    package = importlib.import_module("mtrbench.measures.families")

    found: list[MeasureFamily] = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found.append(module.FAMILY)
    found.sort(key=lambda f: (f.order, f.name))
    return {f.name: f for f in found}


def _claims(f: MeasureFamily) -> tuple[str, ...]:
    """What a family takes for itself: its spellings (lower-case) and its result keys' stem."""
    return (*dict.fromkeys(s.lower() for s in f.names()), f"{f.key_stem}_at_K")


@cache
def _plugins() -> dict[str, tuple[MeasureFamily, str]]:
    """Name -> (family, origin) for the ``mtrbench.measures`` entry points' families whose names and key
    stem are neither built in nor taken by an earlier plugin; a bad family is a warning and is skipped."""
    builtin = {claim for f in builtin_families().values() for claim in _claims(f)}

    candidates: list[plugins.Candidate[MeasureFamily]] = []
    for entry in plugins.entries(plugins.MEASURES):
        for f in entry.items:
            try:
                if not isinstance(f, MeasureFamily):
                    raise TypeError(f"{type(f).__name__} {f!r:.60} is not a MeasureFamily")
                claims, label = _claims(f), f.label
                if not isinstance(f.name, str) or not re.fullmatch(r"[a-z][a-z0-9_\-]*", f.name):
                    raise TypeError(f"measure name {f.name!r} is not a lower-case NAME (letters, digits, _ and -)")
            except (AttributeError, TypeError) as exc:  # e.g. a class attribute the family does not set
                entry.warn(f"{type(exc).__name__}: {exc}; skipped")
                continue
            candidates.append(plugins.Candidate(claims, label, f, entry))
    kept = sorted(plugins.merge("measure", builtin, candidates), key=lambda c: (c.item.order, c.item.name))
    return {c.item.name: (c.item, c.entry.origin) for c in kept}


def plugin_families() -> dict[str, MeasureFamily]:
    """Canonical name -> family, for the families plugins register (read on the first call only)."""
    return {name: f for name, (f, _) in _plugins().items()}


def family_origin(f: MeasureFamily) -> str:
    """``built-in``, or the plugin distribution that registered the family (``name version``)."""
    if builtin_families().get(f.name) is f:
        return "built-in"
    registered = _plugins().get(f.name)
    return registered[1] if registered and registered[0] is f else "unregistered"


def _spellings(families: Iterable[MeasureFamily]) -> dict[str, MeasureFamily]:
    table: dict[str, MeasureFamily] = {}
    for f in families:
        for spelling in f.names():
            previous = table.setdefault(spelling.lower(), f)
            if previous is not f:
                raise RuntimeError(f"measure name '{spelling}' claimed by {previous.name} and {f.name}")
    return table


@cache
def _builtin_spellings() -> dict[str, MeasureFamily]:
    return _spellings(builtin_families().values())


@cache
def _plugin_spellings() -> dict[str, MeasureFamily]:
    return _spellings(plugin_families().values())


def family(name: str) -> MeasureFamily:
    """The family a spelling names (case-insensitive); plugins are read only for a name not built in."""
    found = _builtin_spellings().get(name.lower()) or _plugin_spellings().get(name.lower())
    if found is None:
        raise unknown_name("measure", name, all_families())
    return found
