"""Values in range or refused (issue 22): out-of-range numbers in asv results are a named
error (exit 5), never arithmetic; big integers are refused by the decoder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from neuronasv.cli import main
from neuronasv.errors import CorruptResultsError, ResultsError
from neuronasv.store.columns import ColumnsParser
from neuronasv.store.history import load_history
from tests.analyse.analyse_asvdata import neuronasv_run

A, B = "a" * 40, "b" * 40
SAMPLES = [1.0e-3, 1.1e-3, 1.2e-3, 1.0e-3, 1.05e-3]


def _doc(commit: str, result: str, samples: str, bench: str = "s.time_x") -> bytes:
    cols = '["result", "params", "samples"]'
    row = f"[[{result}], [[\"'a'\"]], [[{samples}]]]"
    return (
        f'{{"version": 2, "commit_hash": "{commit}", "env_name": "e", "date": 5000,'
        f' "params": {{"machine": "m"}}, "result_columns": {cols},'
        f' "results": {{"{bench}": {row}}}}}'
    ).encode()


def _folder(tmp_path: Path, result: str, samples: str, bench: str = "s.time_x") -> Path:
    rd = tmp_path / "results"
    (rd / "m").mkdir(parents=True)
    (rd / "m" / "machine.json").write_text('{"machine": "m", "version": 1}')
    good = ", ".join(map(str, SAMPLES))
    (rd / "m" / f"{A[:8]}-e.json").write_bytes(_doc(A, "1.05e-3", good, bench))
    (rd / "m" / f"{B[:8]}-e.json").write_bytes(_doc(B, result, samples, bench))
    return rd


@pytest.mark.parametrize(
    ("result", "samples", "why"),
    [
        # negative asv samples once gave "-292 %" with an improvement headline
        ("1e-3", "1e-3, -2.9e-3, 1e-3", "samples[0] is out of range: -0.0029"),
        ("1e-3", "1e-3, 0.0, 1e-3", "samples[0] is out of range: 0.0"),
        # 1e308 once turned the arithmetic into NaN, "no change"
        ("1e-3", "1e-3, 1e308, 1e-3", "samples[0] is out of range: 1e+308"),
        ("1e308", "1e-3, 1e-3, 1e-3", "result[0] is out of range: 1e+308"),
        ("-1e-3", "1e-3, 1e-3, 1e-3", "result[0] is out of range: -0.001"),
        # a 401-digit integer sample once was a traceback (exit 1)
        ("1e-3", "1e-3, 1" + "0" * 400, "an integer of 401 digits is out of range"),
        ("1e-3", "1e-3, 1e400", "the number 1e400 is out of range"),
    ],
)
def test_out_of_range_results_are_a_named_error(
    tmp_path: Path, result: str, samples: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rd = _folder(tmp_path, result, samples)
    bad = rd / "m" / f"{B[:8]}-e.json"
    with pytest.raises(CorruptResultsError, match=re.escape(why)):
        ColumnsParser().parse(str(bad), "m")
    (err,) = load_history(rd).load_errors  # the file is refused, nothing computed from it
    assert why in err and str(bad) in err
    code = main(["compare", A, B, "--results-dir", str(rd), "--force"])
    out = capsys.readouterr()
    assert code == ResultsError.exit_code == 5, out
    assert "Traceback" not in out.err and "nan" not in out.out.lower()


def test_track_values_may_be_negative_but_mapped_device_time_may_not(tmp_path: Path) -> None:
    """A ``track_`` benchmark is any finite number; one a sidecar maps is device time
    (seconds), which must be > 0 (its name did not say so when the file was read)."""
    rd = _folder(tmp_path / "plain", "-3.0", "1e-3", bench="s.track_x")
    assert load_history(rd).load_errors == ()
    rd = tmp_path / "mapped"
    table = {("w", "4x4", "float32"): {"aten::mul": (1.0, [5.0, 5.1, 5.2])}}
    path = neuronasv_run(str(rd), "m", A, 1, table)
    data = json.loads(Path(path).read_text())
    row = data["results"]["devtime.DeviceTime.track_devtime"]
    row[data["result_columns"].index("result")][0] = -5e-6
    Path(path).write_text(json.dumps(data))
    with pytest.raises(CorruptResultsError, match="a value in seconds must be > 0, got -5e-06"):
        load_history(rd)
