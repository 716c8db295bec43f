"""One definition of an op change that carries work (measure/opnames.carries_work), used by
the row states' work axis and by the cause sentences' helper count alike."""

from __future__ import annotations

import pytest

from neuronasv.analyse.causes import is_helper
from neuronasv.analyse.states import carried_direction
from neuronasv.measure.opnames import carries_no_work, carries_work
from neuronasv.measure.roofline import op_cost
from neuronasv.model import WorkChange

CFG = ("wl", "4x8", "float32")


def _w(op: str, **costs: float | None) -> WorkChange:
    return WorkChange(*CFG, op=op, kind="calls", calls_base=1.0, calls_head=2.0, **costs)


CASES = [
    # (change, carries work)
    (_w("aten::mul", bytes_base=64.0, bytes_head=128.0, flops_base=8.0, flops_head=16.0), True),
    (_w("aten::full_like", bytes_head=4096.0), True),  # a view name with bytes of its own
    (_w("aten::view", bytes_base=0.0, bytes_head=0.0, flops_base=0.0, flops_head=0.0), False),
    (_w("aten::my_kernel", bytes_base=0.0, bytes_head=0.0), False),  # estimated at zero
    (_w("aten::my_kernel"), True),  # no estimate: not a view by name
    (_w("aten::transpose"), False),  # no estimate, a view by name
]


@pytest.mark.parametrize(("w", "carries"), CASES)
def test_row_states_and_causes_read_one_definition(w: WorkChange, carries: bool) -> None:
    assert carries_work(w) is carries
    assert is_helper(w) is not carries
    # the work axis: more calls of an op that carries no work is "different", never "more"
    if carries and w.bytes_head is not None:
        assert carried_direction([w]) == "more"
    if not carries:
        assert carried_direction([w, _w("aten::add", bytes_base=8.0, bytes_head=8.0)]) == (
            "different"
        )


def test_the_roofline_gives_the_view_ops_zero_cost() -> None:
    for op in ("aten::view", "aten::empty_like", "aten::as_strided"):
        assert carries_no_work(op)
        c = op_cost(op, [[4, 8]], "float32")
        assert (c.flops, c.bytes) == (0.0, 0.0)
    assert not carries_no_work("aten::mul")
