"""The metric registry (:mod:`neuronasv.metrics`): one entry per metric, read by every stage."""

from __future__ import annotations

import pytest

from neuronasv import metrics, units
from neuronasv.metrics import DEVTIME, INSTRUCTIONS, METRICS, by_name, by_prefix, by_unit
from neuronasv.model import SeriesId


def test_every_entry_is_whole_and_distinct() -> None:
    assert len({m.name for m in METRICS}) == len(METRICS)
    assert len({m.prefix for m in METRICS}) == len(METRICS)
    for m in METRICS:
        assert m.name and m.title and m.unit and m.collector and m.axis_label and m.total_title
        assert m.more and m.less and m.more != m.less
        assert m.prefix.endswith("_")
        if m.exact:  # an exact metric has its own state and gate words, never a time word
            assert m.state_more and m.state_less and m.gate
            assert m.more not in ("slower", "faster") and m.judged == "exact"
        else:
            assert m.judged == "time tests"


def test_lookups() -> None:
    assert by_name("instructions") is INSTRUCTIONS
    assert by_prefix("devtime_op") is DEVTIME and by_prefix("time_x") is None
    assert by_unit("instructions") is INSTRUCTIONS
    assert by_unit("seconds") is None and by_unit("bytes") is None  # asv's own mem_ unit
    with pytest.raises(KeyError):
        by_name("nope")


def test_parse_names_keeps_order_and_refuses_unknown() -> None:
    assert metrics.parse_names(" instructions,devtime,instructions") == ("instructions", "devtime")
    with pytest.raises(ValueError, match="unknown metric watts: choose from devtime"):
        metrics.parse_names("devtime,watts")
    with pytest.raises(ValueError, match=r"\(none\)"):
        metrics.parse_names(" , ")


def test_readers_ask_the_registry() -> None:
    """The unit registry and a series' metric are read from the entries, not kept apart."""
    assert units.is_exact(INSTRUCTIONS.unit) and not units.is_exact(DEVTIME.unit)
    assert INSTRUCTIONS.bound == units.MAX_INSTRUCTIONS
    sid = SeriesId(benchmark=f"devtime.RmsnormNaive.{INSTRUCTIONS.prefix}op", params=())
    assert sid.metric == "instructions"
