"""The one registry of measure families, and the measure-string parser.

Families are discovered from the modules of :mod:`mtrbench.measures.families` (each defines
``FAMILY``), so adding a measure is adding one module there. Installed packages add families through
``mtrbench.measures`` entry points (mtrbench.infra.plugins); those are read only when a name or result key is
not a built-in one, or when every family is listed.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable, Sequence
from functools import cache

from mtrbench.infra.errors import MtrbenchError
from mtrbench.measures.base import Measure, MeasureFamily


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
    from mtrbench.infra import plugins  # here: commands that never look a measure up do not import it

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
        from mtrbench.infra.errors import unknown_name

        raise unknown_name("measure", name, all_families())
    return found


_SYNTAX = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_\-]*)(?:@(?P<cutoff>\d+))?(?:\((?P<params>[^()]*)\))?$")


def parse(text: str, where: str | None = None) -> Measure:
    """``nDCG@10``, ``R@100(rel=2)``, ``hole_beir@10``, ``RAGAlign@10(of=nDCG)``."""
    where = where or f"measure '{text}'"
    match = _SYNTAX.match(text.strip())
    if not match:
        raise MtrbenchError(
            f"{where}: write a measure as NAME@K or NAME@K(param=value,...), e.g. nDCG@10, R@100(rel=2)"
        )
    spec = family(match.group("name"))
    rel: int | None = None
    params: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in (match.group("params") or "").split(","))):
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise MtrbenchError(f"{where}: parameters are name=value, got '{part}'")
        if name == "rel":
            if not value.isdigit():
                raise MtrbenchError(f"{where}: rel must be a positive integer, got '{value}'")
            rel = int(value)
        elif name in params:
            raise MtrbenchError(f"{where}: parameter '{name}' given twice")
        else:
            params[name] = value
    cutoff = int(match.group("cutoff")) if match.group("cutoff") else None
    measure = spec.defaults(Measure(spec.name, cutoff, rel, tuple(sorted(params.items()))))
    spec.check(measure, where)
    return measure


def parse_measures(items: Iterable[str], k_values: Sequence[int]) -> list[Measure]:
    """Measure strings; a bare family name (``ndcg``, as task cards list them) expands over ``k_values``.
    Order is kept, repeats dropped."""
    out: list[Measure] = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        if "@" not in item and "(" not in item and not family(item).takes_cutoff:
            expanded = [parse(item)]
        elif "@" not in item and "(" not in item:
            spec = family(item)
            expanded = [spec.defaults(Measure(spec.name, k)) for k in k_values]
            for m in expanded:
                spec.check(m, f"measure '{item}'")
        else:
            expanded = [parse(item)]
        out.extend(m for m in expanded if m not in out)
    if not out:
        raise MtrbenchError("no measure asked for")
    return out


def parse_k_values(text: str | Sequence[int]) -> list[int]:
    values = text.split(",") if isinstance(text, str) else list(text)
    try:
        ks = sorted({int(v) for v in values if str(v).strip()})
    except ValueError:
        raise MtrbenchError(f"k values must be positive integers, got '{text}'") from None
    if not ks or ks[0] < 1:
        raise MtrbenchError(f"k values must be positive integers, got '{text}'")
    return ks


def measure_for_key(key: str) -> Measure | None:
    """The measure a result key names (``recall_at_100_rel2`` -> Recall@100(rel=2)), or None."""
    for families in (builtin_families, plugin_families):  # plugins are read only for a key no built-in makes
        for spec in families().values():
            match = spec.key_pattern().fullmatch(key)
            if match:
                return spec.from_key(match)
    return None


def label(key: str) -> str:
    """``ndcg_at_10`` -> ``nDCG@10``; unknown keys are returned as they are."""
    measure = measure_for_key(key)
    return str(measure) if measure is not None else key
