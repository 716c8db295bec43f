"""The one formatting leaf: one rule per quantity, and no module rounds by hand."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neuronasv import format as fmt

PACKAGE = Path(fmt.__file__).resolve().parent


@pytest.mark.parametrize(
    ("ratio", "text"),
    [
        (1.182, "+18 %"), (1.025, "+2.5 %"), (0.999, "-0.1 %"), (1.0, "+0.0 %"),
        (0.05, "-95 %"), (24.0, "+2300 %"), (1.0996, "+10 %"), (1.0994, "+9.9 %"),
        (None, "n/a"), (float("nan"), "n/a"), (float("inf"), "n/a"),
    ],
)  # fmt: skip
def test_percent_change_has_two_significant_figures(ratio: float | None, text: str) -> None:
    assert fmt.format_delta_pct(ratio) == text


def test_every_percentage_follows_the_same_rule() -> None:
    assert fmt.format_pct(0.123) == "12 %"  # a noise level
    assert fmt.format_pct(0.034) == "3.4 %"
    assert fmt.format_pct(0.10) == "10 %"  # the noise threshold
    assert fmt.format_pct(-0.023, signed=True) == "-2.3 %"
    assert fmt.format_ci(1.121, 1.251) == "+12 … +25 %"
    assert fmt.format_ci(0.842, 0.913) == "-16 … -8.7 %"
    assert fmt.format_ci(None, 1.2) == ""
    assert fmt.pct_number(0.182) == "18" and fmt.pct_number(0.025, signed=True) == "+2.5"


def test_a_machine_s_load_and_clock() -> None:
    assert fmt.format_load(0.4) == "0.4" and fmt.format_load(12.04) == "12.0"
    assert fmt.format_mhz(2596.142) == "2,596 MHz"
    assert fmt.format_load(None) == fmt.format_mhz(float("nan")) == "n/a"


@pytest.mark.parametrize(
    ("p", "text", "sentence"),
    [(0.032, "0.032", "p=0.032"), (0.00041, "0.00041", "p=0.00041"), (1e-4, "0.0001", "p=0.0001"),
     (3.2e-5, "<0.0001", "p<0.0001"), (1.0, "1", "p=1")],
)  # fmt: skip
def test_p_values(p: float, text: str, sentence: str) -> None:
    assert fmt.format_p(p) == text
    assert fmt.p_text(p) == sentence
    assert fmt.format_p(None) == "" and fmt.format_p(float("nan")) == ""


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (0.002355, "seconds", "2.35 ms"), (0.0099996, "seconds", "10.0 ms"),
        (2.36e-5, "seconds", "23.6 µs"), (236e-9, "s", "236 ns"),
        (1.5, "seconds", "1.50 s"), (512, "bytes", "512 bytes"), (1536, "bytes", "1.50 KiB"),
        (64 * 2**20, "bytes", "64.0 MiB"), (3 * 2**30, "bytes", "3.00 GiB"),
        (3.14159, "flops", "3.142 flops"), (None, "seconds", "n/a"),
    ],
)  # fmt: skip
def test_values_with_units(value: float | None, unit: str, text: str) -> None:
    assert fmt.format_value(value, unit) == text


def test_pairs_share_one_scale() -> None:
    assert fmt.format_pair(0.00123, 0.001, "seconds") == "1.23 ms → 1.00 ms"
    assert fmt.format_pair(0.00123, 0.001, "seconds", sep=" vs ") == "1.23 ms vs 1.00 ms"
    assert fmt.format_signed(-0.000595, "seconds") == "-595 µs"
    assert fmt.format_bytes(70 * 2**20) == "70.0 MiB"
    assert fmt.format_calls(3.0, 4.0) == "3 → 4" and fmt.format_calls(2.5, 2.5) == "2.50"


# Hand-rolled percentages and p-values: ``x * 100:.1f``, ``{x:.0%}``, ``{p:.2g}``; ratios
# ``×{r:.3g}``; calls per iteration ``{op.calls_per_iter:g}``.
_BY_HAND = re.compile(
    r"\* ?100(?:\.0)?:[+]?\.?\d*[fg]\}|:[+]?\.\d%\}|\{p[a-z_]*:\.\d[eg]\}"
    r"|[×÷]\{[^}]*:\.?\d*g\}|calls[a-z_]*:(?:g|\.\df)\}"
)


_ALLOWED = {
    # the rule's own text, as the user wrote it (``median:+2.5%``), not a measured figure
    ("rules.py", 'return f"{self.stat} +{self.threshold * 100:g} %"'),
}


def test_ratios_calls_and_peak_fractions() -> None:
    assert fmt.format_ratio(512.0) == "×512" and fmt.format_ratio(1.25) == "×1.25"
    assert fmt.format_ratio(0.5) == "÷2" and fmt.format_ratio(0.5, divide=False) == "×0.5"
    assert fmt.format_calls_per_iter(3.0) == "3" and fmt.format_calls_per_iter(None) == "–"
    assert fmt.format_peak_fraction(0.8) == "80 %"
    assert fmt.format_peak_fraction(1.3) == "above peak"
    assert fmt.format_rate(2.61e10, "B/s") == "26.1 GB/s"
    assert fmt.format_rate(9.42e10, "FLOP/s") == "94.2 GFLOP/s"
    assert fmt.format_rate(1.98e12, "FLOP/s") == "1.98 TFLOP/s"
    assert fmt.format_rate(512.0, "B/s") == "512 B/s"
    assert fmt.format_rate(float("nan"), "B/s") == "n/a"


@pytest.mark.parametrize(
    "line",
    ['f"×{a / b:.3g}"', 'f"÷{1 / r:.3g}"', 'f"{op.calls_per_iter:g}"', 'f"{w.calls_base:.2f}"'],
)
def test_the_hand_rolled_check_sees_ratios_and_calls(line: str) -> None:
    assert _BY_HAND.search(line)


def test_no_module_formats_percentages_or_p_values_by_hand() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "format.py" and path.parent == PACKAGE:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _BY_HAND.search(line) and (path.name, line.strip()) not in _ALLOWED:
                found.append(f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}")
    assert found == []


def test_format_is_a_leaf() -> None:
    """format.py imports nothing of the package but the unit and metric registries; the
    metric registry is a leaf, the unit registry imports only it."""
    import neuronasv.metrics as metrics
    import neuronasv.units as units

    def imports(path: str) -> list[str]:
        text = Path(path).read_text(encoding="utf-8")
        return re.findall(r"^(?:from|import) (neuronasv[\w.]*)", text, re.M)

    assert sorted(set(imports(fmt.__file__))) == ["neuronasv.metrics", "neuronasv.units"]
    assert imports(units.__file__) == ["neuronasv.metrics"]
    assert imports(metrics.__file__) == []


def test_analysis_never_imports_the_renderers() -> None:
    """Presentation lives in report/ (tables included) and format.py; analyse only decides."""
    upward = re.compile(r"^\s*(from|import) neuronasv\.(report|publish|github|commands)\b", re.M)
    layers = ("analyse", "measure", "model")
    paths = [p for layer in layers for p in (PACKAGE / layer).rglob("*.py")]
    assert paths
    for path in sorted(paths):
        assert not upward.search(path.read_text(encoding="utf-8")), path


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(4.24, "4.2 s"), (9.96, "10 s"), (38.2, "38 s"), (210.0, "3.5 min"), (840.0, "14 min"),
     (4320.0, "1.2 h"), (float("nan"), "n/a"), (-1.0, "n/a")],
)  # fmt: skip
def test_wall_time(seconds: float, text: str) -> None:
    assert fmt.format_wall(seconds) == text


def _boundary_values() -> list[float]:
    """Values a hair either side of every rounding and scale boundary of a duration."""
    import numpy as np

    out = []
    for unit in (1e-9, 1e-6, 1e-3, 1.0):
        for m in (9.995, 99.95, 999.5, 1.0, 10.0, 100.0, 0.99, 1.005, 2.675, 0.125, 87.05):
            x = m * unit
            out += [x + k * float(np.spacing(x)) for k in range(-3, 4)]
    for n in range(1, 2000):  # exact halves at each number of decimals
        out += [(n + 0.5) / 100 * 1e-6, (n + 0.5) / 10 * 1e-3, n * 0.005e-6]
    return [*out, 0.0, -1e-6, -4e-12, float("nan"), float("inf"), 1e15, 123456789.0]


@pytest.mark.parametrize("unit", ["seconds", "instructions", "bytes", "flops"])
def test_many_values_at_once_read_as_format_value_reads_each(unit: str) -> None:
    """The site's data files label every point with value_labels (a vectorised path for
    durations): the text is format_value's, value for value, every boundary included."""
    import math

    import numpy as np

    rng = np.random.default_rng(0)
    if unit == "seconds":
        values = [*10 ** rng.uniform(-12, 3, 200_000), *_boundary_values()]
    else:
        values = [*np.round(10 ** rng.uniform(0, 9, 20_000)), 0.5, 2443.25, float("nan")]
    labels, index = fmt.value_labels(values, unit)
    assert len(labels) == len(set(labels))
    for v, i in zip(values, index.tolist(), strict=True):
        want = fmt.format_value(v, unit) if math.isfinite(v) else None
        assert (labels[i] if i >= 0 else None) == want, v


@pytest.mark.parametrize(
    ("lo", "hi", "unit", "labels", "title"),
    [
        (87e-6, 194e-6, "seconds", ["100 µs", "120 µs", "140 µs", "160 µs", "180 µs"],
         "device time"),
        (0.0, 210e-6, "seconds", ["0 µs", "50 µs", "100 µs", "150 µs", "200 µs"], "device time"),
        (100.0e-6, 100.4e-6, "seconds",
         ["100.0 µs", "100.1 µs", "100.2 µs", "100.3 µs", "100.4 µs"], "device time"),
        (0.9e-3, 1.3e-3, "seconds", ["0.9 ms", "1.0 ms", "1.1 ms", "1.2 ms", "1.3 ms"],
         "device time"),
        (0.0, 1.2e6, "instructions",
         ["0", "200,000", "400,000", "600,000", "800,000", "1,000,000", "1,200,000"],
         "instructions per iteration"),
        (1.0, 2.0, "instructions", ["1", "2"], "instructions per iteration"),
        (1000.0, 5e6, "bytes", ["1 MiB", "2 MiB", "3 MiB", "4 MiB"], "bytes"),
    ],
)  # fmt: skip
def test_axis_ticks_step_one_two_five_on_one_scale(
    lo: float, hi: float, unit: str, labels: list[str], title: str
) -> None:
    ticks, texts, got_title = fmt.axis_ticks(lo, hi, unit)
    assert texts == labels and got_title == title
    assert all(lo - 1e-12 <= t <= hi + 1e-12 for t in ticks) and len(ticks) == len(texts)
    assert fmt.axis_ticks(float("nan"), 1.0, unit)[:2] == ([], [])
