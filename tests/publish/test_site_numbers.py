"""One number per fact on the site (issue 28 item 7), as a property over generated documents.

Seeded generators build a machine's history (device-time and instruction-count series of two
workloads: totals and ops, values on both sides of every display-scale boundary) and a
comparison of its newest commit with its parent, run through the real analyse path
(:func:`with_states`), with Δ = head/base − 1 as the estimate defines it. The site is
published from that document and the PR comment rendered from the same one
(:func:`render_comment`); then the numbers are parsed back from what people read and what
the page's script reads:

- the index (latest, "vs parent" and its base), the workload page's metadata and the data
  files' labels at the two compared commits print the comment's base, head and Δ for the
  same series, character for character;
- each printed triple holds Δ = head/base − 1 within the printed precision;
- every other history point is asv's value: its label is ``format_value`` of asv's median,
  its drawn value asv's median to five significant figures;
- an instruction row's badge follows its own count's sign (more / fewer instructions),
  never a work or time word; a total's badge is its own row's state;
- the script formats no number (no ``toFixed`` & co., no unit suffix, no threshold).

The same checks fail on deliberately broken renderers (the old site's asv value at the
newest commit, per-side scales, four-significant-digit history labels, a Δ re-derived from
asv's values): ``test_the_checks_catch_a_broken_renderer``.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from neuronasv.analyse.states import time_axis, with_states
from neuronasv.format import format_value
from neuronasv.model import Finding, FindingsDocument, RunRef, SeriesId, WorkChange
from neuronasv.publish import PublishOptions, publish_site
from neuronasv.publish.sitedata import MachineData, SeriesInfo, SiteData
from tests.builders import finding

from .readback import (
    Key,
    Triple,
    against_the_comment,
    data_files,
    index_triples,
    key_of,
    page_meta,
    page_triples,
    parse_value,
    value_at,
)
from .test_site import NOW

SEEDS = range(24)
OPS = ("aten::add", "aten::mul", "aten::rsqrt")
# values on both sides of the display scales' boundaries (999 µs | 1.00 ms, 9.99 | 10.0 µs)
TIMES = (
    87e-6, 155e-6, 194e-6, 990e-6, 999.4e-6, 1.0004e-3, 1.2e-3, 9.996e-6, 99.96e-6, 3.3e-6,
    28.1e-6, 0.95e-6, 432e-9, 2.5e-3, 1.5,
)  # fmt: skip
RATIOS = (1.0, 1.0004, 0.9996, 1.8, 0.6, 1.05, 0.95, 24.0, 0.04, 1.011)


# --- generated history and document ---------------------------------------------------


def _sid(wl: str, kind: str, op: str | None) -> SeriesId:
    params = ("'4x8'", "'float32'", *((f"'{op}'",) if op else ()))
    return SeriesId(f"b.{wl}.{kind}_{'op' if op else 'total'}", params, wl, "4x8", "float32", op)


def machine(rng: random.Random, commits: int = 24) -> MachineData:
    series: list[SeriesInfo] = []
    for wl in ("wla", "wlb"):
        for op in (None, *OPS):
            series.append(SeriesInfo("py", _sid(wl, "devtime", op), "seconds"))
            series.append(SeriesInfo("py", _sid(wl, "instr", op), "instructions"))
    n = len(series)
    value = np.full((n, commits), np.nan)
    for r, s in enumerate(series):
        if s.unit == "seconds":
            level = rng.choice(TIMES)
            value[r] = [level * math.exp(rng.gauss(0, 0.05)) for _ in range(commits)]
        else:
            level = rng.randint(5_000, 2_000_000)
            value[r] = [level + rng.choice((0, 0, 0, 17, -230)) for _ in range(commits)]
    rel = np.array([[rng.uniform(0.01, 0.2) for _ in range(commits)] for _ in range(n)])
    q25 = np.where([[s.unit == "seconds"] for s in series], value * (1 - rel / 2), np.nan)
    q75 = np.where([[s.unit == "seconds"] for s in series], value * (1 + rel / 2), np.nan)
    hashes = [f"{rng.getrandbits(160):040x}" for _ in range(commits)]
    dates = np.array([1_790_000_000_000 + 3_600_000 * i for i in range(commits)], dtype=np.int64)
    return MachineData(
        "m1", hashes, dates, series, value, q25.astype(np.float32), q75.astype(np.float32)
    )


#: The generator's time decisions as the row's time axis (:func:`time_axis` agrees them
#: with the printed Δ's sign, as analyse does).
_OUTCOMES = {"regression": "slower", "improvement": "faster", "noisy": "undecided",
             "unchanged": "noise"}  # fmt: skip


def row(sid: SeriesId, outcome: str, unit: str, base: float | None, head: float | None,
        *, confirmed: bool | None = None, **fields: Any) -> Finding:  # fmt: skip
    """One row as analyse writes it: its estimate is ``base`` → ``head`` (Δ = head/base − 1,
    its CI ±10 %; ``rounds`` when ``confirmed`` is not None), its state the decision
    ``outcome`` on its own axis (an instruction row: its count's sign; ``new``: head only)."""
    ratio = head / base if base and head is not None else None
    if outcome == "new":
        return finding(sid, "new", unit=unit, base=None, head=head,
                       n=(0, 1 if unit == "instructions" else 10),
                       source="exact count" if unit == "instructions" else "first run",
                       **fields)  # fmt: skip
    if unit == "instructions":
        assert base is not None and head is not None
        axis = "more" if head > base else "fewer" if head < base else "same"
        return finding(sid, unit=unit, base=base, head=head, n=(1, 1), source="exact count",
                       exact=axis, **fields)  # fmt: skip
    time = time_axis(_OUTCOMES[outcome], ratio)  # type: ignore[arg-type]
    return finding(
        sid, unit=unit, base=base, head=head,
        ci=(ratio * 0.9, ratio * 1.1) if ratio else None, n=(10 if base else 0, 10),
        source="first run" if confirmed is None else "rounds", time=time,
        confirmed=bool(confirmed) and time in ("slower", "faster"), **fields,
    )  # fmt: skip


def document(md: MachineData, rng: random.Random) -> FindingsDocument:
    findings = []
    for s in md.series:
        if rng.random() < 0.25:
            continue
        ratio = rng.choice(RATIOS)
        if s.unit == "seconds":
            base = rng.choice(TIMES) * rng.choice((1.0, 1.03))
            head = base * ratio
            verdict = rng.choice(("regression", "improvement", "unchanged", "noisy"))
        else:
            base = float(rng.randint(5_000, 2_000_000))
            head = float(round(base * ratio))
            verdict = (
                "unchanged" if head == base else ("regression" if head > base else "improvement")
            )
        if s.series.op is not None and rng.random() < 0.1:
            findings.append(row(s.series, "new", s.unit, None, head))
            continue
        findings.append(
            row(s.series, verdict, s.unit, base, head, p_value=rng.random() / 10,
                confirmed=rng.choice((None, True, False)))
        )  # fmt: skip
    settings: dict[str, Any] = {"confirm": "ABAB, 3 rounds"} if rng.random() < 0.5 else {}
    # a workload whose work grew (a new op carrying bytes): its rows' work axis says "more",
    # whatever each instruction count's own sign (the issue's `aten::add` -39 % "more-work")
    work = tuple(
        WorkChange(wl, "4x8", "float32", op="aten::full_like", kind="new", calls_head=1.0,
                   bytes_head=4096.0, flops_head=0.0)
        for wl in ("wla", "wlb") if rng.random() < 0.6
    )  # fmt: skip
    return with_states(
        FindingsDocument(
            "compare",
            RunRef(md.commits[-2], md.name),
            RunRef(md.commits[-1], md.name),
            findings=tuple(findings),
            settings=settings,
            work=work,
        )
    )


def workload_triples(site: Path, md: MachineData) -> tuple[dict[Key, Triple], list[str]]:
    """(group, op, axis) -> (base, head, Δ) from each page's metadata, checked against
    the labels its data files carry at the two compared commits (:func:`page_triples`);
    and every history point that is not asv's value (label or drawn value)."""
    triples, problems = page_triples(site)
    by_label = {s.series.label: r for r, s in enumerate(md.series)}
    for page in sorted((site / "m").rglob("*.html")):
        meta = page_meta(page)
        chunks = data_files(page)
        for pos, row in enumerate(meta["rows"]):
            if row["kind"] == "other":
                continue
            key = key_of(meta["title"], row["label"])
            c = row.get("compared")
            label = f"{meta['title']} · {key[1]}" if key[1] else meta["title"]
            r = by_label[label + (" (instructions)" if key[2] == "instr" else "")]
            skip = {c["baseIndex"], c["headIndex"]} if c is not None else set()
            for col in range(len(md.commits)):
                if col in skip or not math.isfinite(md.value[r, col]):
                    continue
                text, drawn = value_at(chunks, pos, col)
                want = format_value(float(md.value[r, col]), md.series[r].unit)
                if text != want or drawn is None or abs(drawn / md.value[r, col] - 1) > 1e-4:
                    problems.append(f"{label} #{col}: drawn {drawn} {text!r}, asv {want!r}")
    return triples, problems


_BADGES_OF_COUNTS = {"more instructions", "fewer instructions", "new", "ok", "acknowledged"}


def site_problems(site: Path, md: MachineData, doc: FindingsDocument) -> list[str]:
    """Everything the site prints about the document's numbers that disagrees (see module)."""
    index, badges = index_triples((site / "index.html").read_text())
    pages, problems = workload_triples(site, md)
    problems += against_the_comment(site, doc, pages, at_least=4)
    for key, badge in badges.items():
        if key[2] == "instr":
            if badge not in _BADGES_OF_COUNTS:
                problems.append(f"{key}: instruction row badged {badge!r}")
            t = index.get(key)
            if t is not None and badge != "acknowledged":
                sign = parse_value(t[1])[0] - parse_value(t[0])[0]
                want = "more instructions" if sign > 0 else "fewer instructions" if sign else "ok"
                if badge != want:
                    problems.append(f"{key}: {badge!r} beside {t[0]} → {t[1]}")
    by_series = {(f.series.workload, f.series.op, "instr" if f.unit == "instructions" else "time"):
                 f for f in doc.findings}  # fmt: skip
    for (title, op, axis), badge in badges.items():
        f = by_series.get((title.split()[0], op, axis))
        own = f is not None and f.state is not None and f.state.confirmed
        if op is None and axis == "time" and f is not None and badge == "confirmed" and not own:
            problems.append(f"{title}: total badged confirmed, its own time is not")
    return problems


# --- the property ------------------------------------------------------------------------


def _publish(seed: int, out: Path) -> tuple[MachineData, FindingsDocument]:
    rng = random.Random(seed)
    md = machine(rng)
    doc = document(md, rng)
    publish_site(SiteData([md]), out, findings=doc, options=PublishOptions(now=NOW))
    return md, doc


@pytest.mark.parametrize("seed", SEEDS)
def test_the_site_prints_the_comments_numbers(seed: int, tmp_path: Path) -> None:
    md, doc = _publish(seed, tmp_path)
    assert site_problems(tmp_path, md, doc) == []


def _raw_head(real: Callable[..., Any]) -> Callable[..., Any]:
    """The old site: the newest commit's point is asv's result of its run."""

    def broken(f: Finding, base_col: int | None, head_col: int, raw_base: Any = None,
               raw_head: Any = None) -> Any:  # fmt: skip
        est = replace(f.estimate, head=raw_head if raw_head is not None else f.head)
        return real(replace(f, estimate=est), base_col, head_col, raw_base, raw_head)

    return broken


def _rederived(real: Callable[..., Any]) -> Callable[..., Any]:
    """Δ recomputed from asv's values instead of the estimate's."""
    from neuronasv.format import format_delta_pct

    def broken(f: Finding, base_col: int | None, head_col: int, raw_base: Any = None,
               raw_head: Any = None) -> Any:  # fmt: skip
        c = real(f, base_col, head_col, raw_base, raw_head)
        if raw_base and raw_head:
            c = replace(c, change=format_delta_pct(raw_head / raw_base))
        return c

    return broken


def _four_digits(values: Any, unit: str) -> tuple[list[str], Any]:
    """The old script's history labels: four significant digits, its own rounding."""
    v = np.asarray(values, dtype=np.float64).ravel()
    texts = [f"{x:.4g}" for x in v]
    labels = sorted({t for t, x in zip(texts, v, strict=True) if math.isfinite(x)})
    at = {t: i for i, t in enumerate(labels)}
    return labels, np.array([at.get(t, -1) if math.isfinite(x) else -1
                             for t, x in zip(texts, v, strict=True)])  # fmt: skip


def _own_scales(base: Any, head: Any, unit: str, *, sep: str = " → ") -> str:
    return format_value(base, unit) + sep + format_value(head, unit)


BROKEN: dict[str, tuple[str, Callable[..., Any]]] = {
    "asv value at the newest commit": ("neuronasv.publish.site.compared_of", _raw_head),
    "Δ re-derived from asv's values": ("neuronasv.publish.site.compared_of", _rederived),
    "base and head on their own scales": (
        "neuronasv.publish.compared.format_pair", lambda _real: _own_scales),
    "history labels with four digits": (
        "neuronasv.publish.output.value_labels", lambda _real: _four_digits),
}  # fmt: skip


@pytest.fixture(params=sorted(BROKEN))
def broken(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    target, make = BROKEN[request.param]
    module, _, name = target.rpartition(".")
    import importlib

    mod = importlib.import_module(module)
    monkeypatch.setattr(mod, name, make(getattr(mod, name)))
    yield request.param


def test_the_checks_catch_a_broken_renderer(broken: str, tmp_path: Path) -> None:
    found = []
    for seed in SEEDS[:8]:
        md, doc = _publish(seed, tmp_path / str(seed))
        found += site_problems(tmp_path / str(seed), md, doc)
    assert found, f"a renderer with {broken} passed the checks"


def test_an_instruction_count_is_never_badged_with_a_work_word(tmp_path: Path) -> None:
    """The issue's row: ``aten::add 15,073 → 9,206 instructions (−39 %)`` in a workload whose
    work grew was badged ``more-work``; its badge is its own count's: fewer instructions."""
    rng = random.Random(5)
    md = machine(rng)
    add = next(r for r, s in enumerate(md.series)
               if s.series.op == "aten::add" and s.unit == "instructions")  # fmt: skip
    tot = next(r for r, s in enumerate(md.series)
               if s.series.op is None and s.unit == "instructions"
               and s.series.workload == md.series[add].series.workload)  # fmt: skip
    doc = with_states(
        FindingsDocument(
            "compare",
            RunRef(md.commits[-2], md.name),
            RunRef(md.commits[-1], md.name),
            findings=(
                row(md.series[add].series, "improvement", "instructions", 15073.0, 9206.0),
                row(md.series[tot].series, "regression", "instructions", 96045.0, 104652.0),
            ),
        )
    )  # fmt: skip
    publish_site(SiteData([md]), tmp_path, findings=doc, options=PublishOptions(now=NOW))
    _, badges = index_triples((tmp_path / "index.html").read_text())
    wl = md.series[add].series.workload
    assert badges[(f"{wl} 4x8 float32", "aten::add", "instr")] == "fewer instructions"
    assert badges[(f"{wl} 4x8 float32", None, "instr")] == "more instructions"
    assert "more-work" not in (tmp_path / "index.html").read_text().split("<table")[1]


_JS_FORMATTING = re.compile(
    r"toFixed|toPrecision|toExponential|toLocaleString|NumberFormat|µs|\bms\b|"
    r"0\.1\b|0\.02\b|1e[-+]?\d"
)


def test_the_script_formats_no_number_and_keeps_no_threshold() -> None:
    from importlib import resources

    js = (resources.files("neuronasv.publish") / "assets" / "site.js").read_text()
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", js, flags=re.S)  # comments may name them
    assert not _JS_FORMATTING.findall(code)


def test_the_demo_check_compares_the_site_with_the_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ci/check_demo_words.py`` (run on a fresh-clone demo) compares the comment's rows
    with the site's index and workload pages: none differ here, and with asv's value at
    the newest commit (the old site) it names them."""
    import importlib.util

    from neuronasv.report.markdown import render_comment

    path = Path(__file__).resolve().parents[2] / "ci" / "check_demo_words.py"
    spec = importlib.util.spec_from_file_location("check_demo_words", path)
    assert spec is not None and spec.loader is not None
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    _, doc = _publish(0, tmp_path / "good")
    found, rows = check.site_numbers(render_comment(doc), tmp_path / "good")
    assert found == [] and rows >= 4
    import neuronasv.publish.site as site_module

    monkeypatch.setattr(site_module, "compared_of", _raw_head(site_module.compared_of))
    _, doc = _publish(0, tmp_path / "old")
    found, _ = check.site_numbers(render_comment(doc), tmp_path / "old")
    assert found and "comment (" in found[0]
