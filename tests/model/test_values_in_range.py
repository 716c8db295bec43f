"""Values in range or refused (issue 22): every number a document holds is checked when
it is read — samples > 0, counts, bytes, FLOPs and op/module times >= 0, nothing beyond
1e18 — and integer literals too long for a measurement are refused by the decoder."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from neuronasv.errors import CorruptResultsError, ResultsError
from neuronasv.model import FindingsDocument, ProfileDocument
from neuronasv.model.rounds import RoundsDocument
from tests.model import documents


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    node: Any = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


ROUND_SAMPLE = ("measurements", 0, "series", 0, "samples", 0)
OP = ("workloads", 0, "ops", 0)


@pytest.mark.parametrize(
    ("make", "cls", "path", "value", "why"),
    [
        # negative samples in rounds.json were accepted ("improvement of -115 %")
        (documents.rounds, RoundsDocument, ROUND_SAMPLE, -1e-5, r"samples\[0\] must be .*> 0"),
        (documents.rounds, RoundsDocument, ROUND_SAMPLE, 0.0, r"samples\[0\] must be .*> 0"),
        (documents.rounds, RoundsDocument, ROUND_SAMPLE, 1e308, r"samples\[0\] must be finite"),
        # call counts of +-1e300 printed in the work table
        (documents.profile, ProfileDocument, (*OP, "calls_per_iter"), 1e300, "calls_per_iter"),
        (documents.profile, ProfileDocument, (*OP, "calls_per_iter"), -1e300, "calls_per_iter"),
        (documents.profile, ProfileDocument, (*OP, "calls_per_iter"), -1, "calls_per_iter"),
        (documents.profile, ProfileDocument, (*OP, "bytes"), -8.0, "bytes must be"),
        (documents.profile, ProfileDocument, (*OP, "flops"), 1e300, "flops must be"),
        (documents.profile, ProfileDocument, (*OP, "self_device_time_us", 0), -3.0, "self_dev"),
        (documents.profile, ProfileDocument, ("workloads", 0, "device_time_us", 0), 0, "> 0"),
        # module times of 1e300 µs printed a 300-digit percentage
        (
            documents.profile,
            ProfileDocument,
            ("workloads", 0, "modules"),
            [{"path": "", "device_time_us": [1e300], "self_device_time_us": [1.0]}],
            r"device_time_us\[0\] must be finite, at most 1e\+18",
        ),
        (documents.findings, FindingsDocument, ("work", 0, "calls_head"), 1e300, "calls_head"),
        (documents.findings, FindingsDocument, ("work", 0, "bytes_base"), -1.0, "bytes_base"),
        (documents.findings, FindingsDocument, ("findings", 0, "estimate", "n_base"), 2**60,
         "n_base"),
        (documents.findings, FindingsDocument, ("findings", 0, "estimate", "base"), 1e300,
         "base"),
    ],
)
def test_out_of_range_numbers_are_refused_by_name(
    make: Callable[[], Any], cls: Any, path: tuple[Any, ...], value: Any, why: str
) -> None:
    good = make().to_json()
    cls.from_json(good)  # the document itself is fine
    with pytest.raises(CorruptResultsError, match=why):
        cls.from_json(_set(good, path, value))


@pytest.mark.parametrize("digits", [19, 401, 5000])
def test_big_integers_are_refused_by_the_decoder(digits: int) -> None:
    """A 5000-digit integer in a findings document was exit 11 (Python's int conversion
    limit); the decoder now refuses any integer literal over 18 digits, unconverted."""
    text = documents.findings().dumps().replace('"n_base": 10', f'"n_base": {"9" * digits}')
    assert str(digits * "9") in text
    with pytest.raises(CorruptResultsError, match=f"an integer of {digits} digits") as exc:
        FindingsDocument.loads(text, source="findings.json")
    assert exc.value.exit_code == ResultsError.exit_code == 5
    text = json.dumps(documents.rounds().to_json()).replace('"rounds": 2', '"rounds": 1' + "0" * 30)
    with pytest.raises(CorruptResultsError, match="an integer of 31 digits"):
        RoundsDocument.loads(text)
