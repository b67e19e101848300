"""The measure-string parser (``nDCG@10``, ``R@100(rel=2)``, family names over cutoffs) and the reading of
result keys back into measures. The registry of families they look names up in is in
:mod:`mtrbench.measures.base`, beside the ``Measure`` whose printed name and key come from its family.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from mtrbench.infra.errors import MtrbenchError
from mtrbench.infra.numeric import ascii_digits
from mtrbench.measures.base import Measure, builtin_families, family, plugin_families

_SYNTAX = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_\-]*)(?:@(?P<cutoff>[0-9]+))?(?:\((?P<params>[^()]*)\))?$")


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
            if not ascii_digits(value):
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
