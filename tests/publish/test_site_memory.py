"""Memory is charted on its own axis (issue 40 item 2), read from the chart specs a publish
writes (the workload page's metadata: every chart the script draws is one total row, one
stack of layers, or one op row, each with the value axis Python computed).

A workload with device time, memory (``alloc_``) and instruction series, totals and two ops:
the workload's memory total gets its own chart (the registry's ``total_title``), its ops
their own stack (``stack_title``), every memory chart's axis is titled with the registry's
``axis_label`` ("bytes allocated per iteration") and labelled in bytes, and no chart mixes
a memory row with a device-time or instruction row. ``_specs_broken`` puts memory on the
device-time charts, as a renderer without the registry would, and the checks catch it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from neuronasv.metrics import DEVTIME, INSTRUCTIONS, MEMORY, METRICS, Metric
from neuronasv.model import History, Point, Series, SeriesId
from neuronasv.publish import PublishOptions, from_history, publish_site

from .readback import data_files, page_meta
from .test_site import NOW

COMMITS = [f"{i:040x}" for i in range(1, 9)]
UNITS = {DEVTIME: "seconds", INSTRUCTIONS: INSTRUCTIONS.unit, MEMORY: MEMORY.unit}
PREFIX = {DEVTIME: "devtime", INSTRUCTIONS: "instr", MEMORY: "alloc"}


def _series(metric: Metric, op: str | None, base: float, step: float) -> Series:
    kind = "op" if op else "total"
    params = ("'4x512'", "'float32'") + ((repr(op),) if op else ())
    sid = SeriesId(f"devtime.SynthGate.{PREFIX[metric]}_{kind}", params, "synth.gate", "4x512",
                   "float32", op)  # fmt: skip
    pts = []
    for i, c in enumerate(COMMITS):
        v = base * (step if i >= 5 else 1.0)
        samples = (v,) * 3 if metric.exact else (v * 0.98, v, v * 1.02)
        pts.append(Point(c, i, v, samples, date=1_700_000_000_000 + i * 60_000))
    return Series("box", "env", sid, UNITS[metric], tuple(pts))


def _history() -> History:
    series = []
    for metric, base in ((DEVTIME, 30e-6), (MEMORY, 8192.0), (INSTRUCTIONS, 2.0e5)):
        step = 1.5 if metric is MEMORY else 1.0  # commit 5: aten::mul's second temporary
        series.append(_series(metric, None, 3 * base, 1.0 + (step - 1.0) / 3))
        series.append(_series(metric, "aten::mul", base, step))
        series.append(_series(metric, "aten::gelu", 2 * base, 1.0))
    return History(series=tuple(series), commits=tuple(COMMITS))


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    publish_site(from_history(_history()), out, options=PublishOptions(now=NOW))
    (got,) = sorted(out.glob("m/*/*.html"))
    return got


def _metric_of_axis(axis: str) -> Metric:
    return DEVTIME if axis == "time" else next(m for m in METRICS if m.name == axis)


def _charts(meta: dict[str, Any]) -> list[tuple[str, list[int], dict[str, Any]]]:
    """(title, rows drawn, value axis) of every chart the page draws."""
    out = [(t["title"], [t["row"]], meta["rows"][t["row"]]["y"]) for t in meta["totals"]]
    out += [(s["title"], [L["row"] for L in s["layers"]], s["y"]) for s in meta["stacks"]]
    out += [(meta["rows"][p]["label"], [p], meta["rows"][p]["y"]) for p in meta["order"]]
    return out


def _check(meta: dict[str, Any]) -> list[str]:
    problems = []
    for title, rows, y in _charts(meta):
        axes = {meta["rows"][r]["axis"] for r in rows}
        if len(axes) != 1:
            problems.append(f"{title!r} mixes axes {sorted(axes)}")
            continue
        metric = _metric_of_axis(axes.pop())
        if y["title"] != metric.axis_label:
            problems.append(f"{title!r}: axis {y['title']!r}, not {metric.axis_label!r}")
        units = {meta["rows"][r]["unit"] for r in rows}
        if units != {UNITS[metric]}:
            problems.append(f"{title!r}: units {sorted(units)}")
    return problems


def _specs_broken(meta: dict[str, Any]) -> dict[str, Any]:
    """Memory drawn on the device-time charts: its total's chart gone, its ops in the time
    stack under the time axis."""
    rows = meta["rows"]
    mem = [p for p, r in enumerate(rows) if r["axis"] == MEMORY.name]
    totals = [t for t in meta["totals"] if rows[t["row"]]["axis"] != MEMORY.name]
    stacks = [dict(s) for s in meta["stacks"] if rows[s["layers"][0]["row"]]["axis"] == "time"]
    stacks[0]["layers"] = stacks[0]["layers"] + [
        {"row": p, "colour": "#000"} for p in mem if rows[p]["label"] != "total (memory)"
    ]
    return {**meta, "totals": totals, "stacks": stacks}


def test_the_memory_total_and_its_ops_have_their_own_charts(page: Path) -> None:
    meta = page_meta(page)
    rows = meta["rows"]
    by_title = {t["title"]: rows[t["row"]] for t in meta["totals"]}
    assert set(by_title) == {DEVTIME.total_title, INSTRUCTIONS.total_title, MEMORY.total_title}
    mem_total = by_title[MEMORY.total_title]
    assert mem_total["axis"] == MEMORY.name and mem_total["unit"] == MEMORY.unit
    assert mem_total["y"]["title"] == "bytes allocated per iteration" == MEMORY.axis_label
    assert by_title[DEVTIME.total_title]["y"]["title"] == DEVTIME.axis_label
    stacks = {s["title"]: s for s in meta["stacks"]}
    assert MEMORY.stack_title in stacks and DEVTIME.stack_title in stacks
    mem_stack = stacks[MEMORY.stack_title]
    assert {rows[L["row"]]["label"] for L in mem_stack["layers"]} == {
        "aten::mul (memory)", "aten::gelu (memory)"}  # fmt: skip
    assert mem_stack["y"]["title"] == MEMORY.axis_label
    time_stack = stacks[DEVTIME.stack_title]
    assert all(rows[L["row"]]["axis"] == "time" for L in time_stack["layers"])
    # the memory axis reads bytes, never a time: up to 12,288 + 16,384 bytes stacked
    assert not any(u in lab for lab in mem_stack["y"]["labels"] for u in ("µs", "ms", " s"))
    assert mem_stack["y"]["max"] >= 12288 + 16384
    assert _check(meta) == []


def test_the_data_files_hold_the_bytes_on_the_memory_rows(page: Path) -> None:
    meta = page_meta(page)
    rows = meta["rows"]
    (mul,) = [p for p, r in enumerate(rows) if r["label"] == "aten::mul (memory)"]
    chunk = data_files(page)[0]
    drawn = [None if v is None else v * chunk["scale"][mul] for v in chunk["v"][mul]]
    assert drawn == [8192.0] * 5 + [12288.0] * 3


def test_the_check_catches_memory_on_a_time_chart(page: Path) -> None:
    broken = _check(_specs_broken(page_meta(page)))
    assert broken and any("mixes axes" in p for p in broken), broken
