"""The one ranking rule every searcher here follows, and the exact merge of partial top-k lists.

Rule: higher score first; equal scores rank by lower corpus position. ``torch.topk`` alone leaves the
order (and, at the k-th place, the choice) among equal scores unspecified, so a sharded search could
disagree with a single-device one exactly where two documents tie. ``select_top`` pins the choice:
it keeps ``topk``'s speed and falls back to a full stable sort only for rows whose k-th score is tied
with a score left out.
"""

from __future__ import annotations

import torch


def _order(scores: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Column permutation per row sorting by (score descending, id ascending)."""
    by_id = torch.argsort(ids, dim=1, stable=True)
    by_score = torch.argsort(scores.gather(1, by_id), dim=1, descending=True, stable=True)
    return by_id.gather(1, by_score)


def select_top(scores: torch.Tensor, ids: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The best ``k`` of each row of ``scores`` (Q, N) under the rule above; ``ids`` (Q, N) or (N,) are the
    corpus positions of the columns. Returns (scores, ids), each (Q, min(k, N)), best first."""
    if ids.dim() == 1:
        ids = ids.unsqueeze(0).expand(scores.shape[0], -1)
    k = min(k, scores.shape[1])
    if k == 0 or scores.shape[0] == 0:
        return scores[:, :0], ids[:, :0]
    top_s, pos = torch.topk(scores, k, dim=1)
    kth = top_s[:, -1:]
    # a row is ambiguous when topk had to choose among scores equal to its k-th: then its choice may not be
    # the lowest positions, and that row is sorted in full
    ambiguous = (scores == kth).sum(1) != (top_s == kth).sum(1)
    top_i = ids.gather(1, pos)
    order = _order(top_s, top_i)
    top_s, top_i = top_s.gather(1, order), top_i.gather(1, order)
    if bool(ambiguous.any()):
        rows = ambiguous.nonzero().squeeze(1)
        full = _order(scores[rows], ids[rows])[:, :k]
        top_s[rows] = scores[rows].gather(1, full)
        top_i[rows] = ids[rows].gather(1, full)
    return top_s, top_i


def merge_top(parts: list[tuple[torch.Tensor, torch.Tensor]], k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact top-k of the union of partial results ((Q, k_i) scores, (Q, k_i) corpus ids) over disjoint
    parts of the corpus: each part's top-k under the rule holds every document of the overall top-k from it."""
    scores = torch.cat([s.float() for s, _ in parts], dim=1)
    ids = torch.cat([i.long() for _, i in parts], dim=1)
    return select_top(scores, ids, k)
