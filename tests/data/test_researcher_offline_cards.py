"""`mtrbench tasks --offline`: a card runs offline only when its local folder exists and it asks the user for
nothing that cannot ship (iKAT and CAsT 2022 bundle their topics, not NIST's qrels nor the passage collection)."""

from __future__ import annotations

import pytest

from mtrbench.data import load_task
from mtrbench.data.cards import builtin_cards, card_from_dict
from mtrbench.infra.errors import MtrbenchError


def _loads_with_nothing_given(card) -> bool:
    try:
        load_task(card)
    except MtrbenchError:
        return False
    return True


def test_offline_means_the_task_loads_with_nothing_given():
    local = {name: card for name, card in builtin_cards().items() if card.local_path() and card.local_path().exists()}
    said = {name for name, card in local.items() if card.runs_offline()}
    assert said == {"mtrbench-sample", "ikat-2023-ptkb"}
    for name, card in local.items():  # the claim checked against a load without --data-dir or --corpus
        assert _loads_with_nothing_given(card) == (name in said), name
    for name in ("ikat-2023", "ikat-2023-train", "ikat-2024", "ikat-2025", "trec-cast-2022"):
        assert "corpus" in local[name].user_supplies and not local[name].runs_offline()


def test_user_supplies_names_only_what_a_user_can_bring(tmp_path):
    card = {"name": "t", "description": "d", "format": "native", "source": {"path": str(tmp_path)}}
    card |= {"splits": ["test"], "eval_split": "test"}
    assert card_from_dict(card, "t.yaml").runs_offline()
    assert not card_from_dict({**card, "user_supplies": ["qrels"]}, "t.yaml").runs_offline()
    with pytest.raises(MtrbenchError, match=r"t\.yaml: user_supplies \['licence'\] not among"):
        card_from_dict({**card, "user_supplies": ["licence"]}, "t.yaml")
