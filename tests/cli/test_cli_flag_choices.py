"""The choice lists and defaults the flags repeat from heavy domain modules (mtrbench/cli/flags/choices.py) equal
their sources, so `--help` and argparse's refusals say what the code does."""

from __future__ import annotations

from mtrbench.cli.flags import choices
from mtrbench.generation import defaults as generation
from mtrbench.judge.nuggets.ikat import DEFAULT_VITAL_GRADE
from mtrbench.judge.nuggets.sources import FORMATS
from mtrbench.measures.protocols import OFFICIAL_NAMES, PROTOCOLS, TREC_EVAL
from mtrbench.models.spec import CHECKPOINT_KINDS, KINDS
from mtrbench.results import overwrite
from mtrbench.retrieve.fusion import FusionOptions
from mtrbench.serialize.history import DEFAULT_HISTORY
from mtrbench.synthesize.quality import QUALITY_CHOICES


def test_each_repeated_choice_equals_its_source():
    assert choices.OVERWRITE_STRATEGIES == overwrite.OVERWRITE_STRATEGIES
    assert choices.DEFAULT_OVERWRITE == overwrite.DEFAULT_OVERWRITE
    assert choices.DEFAULT_RRF_K == FusionOptions().rrf_k
    assert choices.DEFAULT_HISTORY == DEFAULT_HISTORY
    assert choices.GENERATION_HISTORIES == generation.GENERATION_HISTORIES
    assert choices.GENERATION_TOP_K == generation.DEFAULT_TOP_K
    assert choices.GENERATION_HISTORY == generation.DEFAULT_HISTORY
    assert choices.DEFAULT_VITAL_GRADE == DEFAULT_VITAL_GRADE
    assert choices.NUGGET_FORMATS == FORMATS
    assert choices.QUALITY_CHOICES == QUALITY_CHOICES
    assert choices.MODEL_KINDS == CHECKPOINT_KINDS
    assert choices.ALL_KINDS == KINDS


def test_official_protocols_are_the_registry_s():
    """Every registered protocol but trec_eval, in the registry's order (a protocol added to the registry
    and not here would be missing from `eval --help` and `score --help`)."""
    assert choices.OFFICIAL_PROTOCOLS == tuple(name for name in PROTOCOLS if name != TREC_EVAL)
    assert choices.OFFICIAL_PROTOCOLS == OFFICIAL_NAMES
