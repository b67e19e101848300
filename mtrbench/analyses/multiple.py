"""Many p-values at once: Holm's step-down adjustment (family-wise error rate).

Holm (1979): sort the m p-values ascending, multiply the i-th smallest (from 1) by m - i + 1, carry the
running maximum forward so adjusted values keep the order of the raw ones, and cap at 1. Rejecting
where the adjusted value is below alpha controls the chance of any false rejection in the family at alpha,
under any dependence between the tests. statsmodels' ``multipletests(method="holm")`` computes the same.
"""

from __future__ import annotations

from collections.abc import Sequence


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values in the input order; ``None`` (no test) stays ``None`` and is not counted in m."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(tested)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[index] = running
    return adjusted
