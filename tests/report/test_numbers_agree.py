"""One number per fact, as a property (issue 28 item 7): over many generated comparisons,
every view prints each row's estimate as it is, and the numbers read back agree.

Each document comes from the real analysis on a generated history: one or two workloads
(some with module series), ops that slow down, speed up or stay, new and removed ops,
instruction counts of the step, the ops and the modules (some more, some fewer, an op
counted on one side only), run through :func:`compare` and, for half of them,
:func:`confirm` on a seeded runner (so rows come from the rounds' estimator too). Every
view is rendered — comment (and its trimmed form), job summary, ``compare`` text and
markdown, terminal, annotations, ``regressions`` text, and the privileged step's comment,
recomputed from the same numbers — and read back:

- every ``X → Y | Δ`` has Δ = Y / X - 1 within the printed precision;
- "where the time went" adds up to the row's change, and a module chain starts at the
  row's own Δ;
- a series prints the same base, head and Δ in every view;
- a word never contradicts its own axis's sign (time words: ``tests/report/test_views_agree``;
  instruction words here), and an instruction row carries no work word.

The checks must fail on a broken renderer: the last tests perturb a formatter and require
the checks to catch it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from neuronasv.analyse.confirm import confirm
from neuronasv.analyse.pairwise import Settings, compare
from neuronasv.analyse.recompute import recompute
from neuronasv.github.issues_sync import change_point_key, render_body, render_title
from neuronasv.model import (
    ChangePoint,
    FindingsDocument,
    History,
    ModuleProfile,
    OpProfile,
    Point,
    Series,
    SeriesId,
    WorkloadProfile,
)
from neuronasv.model.counts import PassCounts
from neuronasv.report.annotations import render_annotations
from neuronasv.report.markdown import render_comment, render_comment_trimmed
from neuronasv.report.summary import render_summary
from neuronasv.report.tables import compare_markdown, compare_text, history_text
from neuronasv.report.terminal import terminal_text
from tests.report.numbers import (
    check_badges,
    check_pairs,
    check_parts,
    disagreements,
    rows_by_label,
)
from tests.report.test_views_agree import check_parentheses

BASE, HEAD = "a" * 40, "b" * 40
MACHINE = "gen-cpu"
FP = {"backend": "cpu", "device_model": "cpu"}
DOCS = 24
OPS = ("aten::mm", "aten::mul", "aten::add", "aten::rsqrt", "aten::silu", "aten::slice")


def _levels(rng: np.random.Generator) -> dict[str, tuple[str, float, float]]:
    """op -> (module path, base µs, head/base factor); a factor of 0 = removed at head,
    ``inf`` = new at head."""
    out = {}
    for op in rng.choice(OPS, size=int(rng.integers(2, 5)), replace=False):
        path = str(rng.choice(["", "block", "block.mlp", "block.attn"]))
        kind = rng.random()
        factor = (
            0.0 if kind < 0.07 else math.inf if kind < 0.14
            else float(rng.choice([1.0, 1.0, 1.5, 0.7, math.exp(rng.normal(0, 0.3))]))
        )  # fmt: skip
        out[str(op)] = (path, float(rng.lognormal(math.log(8.0), 1.0)), factor)
    return out


def _side(
    levels: dict[str, tuple[str, float, float]], side: str, rng: np.random.Generator, n: int = 10
) -> dict[str | None, np.ndarray]:
    """µs samples of the total, each op that runs on ``side`` and each module."""
    offset = math.exp(rng.normal(0.0, 0.02))
    out: dict[str | None, np.ndarray] = {}
    for op, (path, us, k) in levels.items():
        if (side == "base" and math.isinf(k)) or (side == "head" and k == 0.0):
            continue
        level = us * (1.0 if side == "base" or math.isinf(k) else k)
        xs = level * offset * np.exp(rng.normal(0.0, 0.04, n))
        bits = path.split(".") if path else []
        for key in (op, None, *(f"module:{'.'.join(bits[: i + 1])}" for i in range(len(bits)))):
            out[key] = out.get(key, np.zeros(n)) + xs
    return out


def _counts(levels: dict[str, tuple[str, float, float]], side: str) -> PassCounts:
    ops = {}
    for op, (_, us, k) in levels.items():
        if (side == "base" and math.isinf(k)) or (side == "head" and k == 0.0):
            continue
        n = round(us * 1000)
        ops[op] = float(n if side == "base" or math.isinf(k) else round(n * min(k, 3.0)))
    if side == "head" and "aten::slice" in ops:
        del ops["aten::slice"]  # runs nested at head: no count of its own there
    return PassCounts(total=float(sum(ops.values()) + 5000), ops=ops)


def _profile(wl: str, side: str, xs: dict[str | None, np.ndarray],
             levels: dict[str, tuple[str, float, float]]) -> WorkloadProfile:  # fmt: skip
    ops = []
    for op, v in xs.items():
        if op is None or op.startswith("module:"):
            continue
        path = levels[op][0]
        ops.append(OpProfile(op, 8.0 if op == "aten::slice" else 1.0, tuple(v), tuple(v),
                             modules={path: 1.0} if path else {}))  # fmt: skip
    modules = [ModuleProfile(p.removeprefix("module:"), tuple(v), tuple(v))
               for p, v in xs.items() if p and p.startswith("module:")]  # fmt: skip
    if modules:
        modules.insert(0, ModuleProfile("", tuple(xs[None]), (0.0,) * len(xs[None])))
    if "aten::slice" in levels and "aten::slice" not in xs:  # still runs, nested
        ops.append(OpProfile("aten::slice", 8.0, (0.1,) * 10, (0.1,) * 10))
    return WorkloadProfile(wl, "cpu", "4x64", "float32", tuple(xs[None]), tuple(ops),
                           device_time_is_cpu=True, modules=tuple(modules),
                           counted=_counts(levels, side))  # fmt: skip


def _unit(sid: SeriesId) -> str:
    return "instructions" if ".instr_" in sid.benchmark else "seconds"


def history(seed: int) -> History:
    """A generated two-commit history (see the module docstring)."""
    rng = np.random.default_rng(seed)
    series: dict[SeriesId, list[Point]] = {}
    profiles: dict[str, list[WorkloadProfile]] = {BASE: [], HEAD: []}
    for wl in ("gen.block", "gen.norm")[: int(rng.integers(1, 3))]:
        levels = _levels(rng)
        for order, (commit, side) in enumerate(((BASE, "base"), (HEAD, "head"))):
            xs = _side(levels, side, rng)
            prof = _profile(wl, side, xs, levels)
            profiles[commit].append(prof)
            for name, v in prof.series_samples("seconds").items():
                sid = SeriesId("gen.devtime", (wl, name or "total"), wl, "4x64", "float32", name)
                series.setdefault(sid, []).append(
                    Point(commit, order, float(np.median(v)), tuple(v))
                )
            counts = prof.counted
            assert counts is not None
            for target, value in {None: counts.total, **counts.ops}.items():
                bench = "gen.instr_total" if target is None else "gen.instr_op"
                sid = SeriesId(bench, (wl, target or "total"), wl, "4x64", "float32", target)
                series.setdefault(sid, []).append(Point(commit, order, value, (value,)))
    return History(
        series=tuple(
            Series(MACHINE, "env", sid, _unit(sid), tuple(pts)) for sid, pts in series.items()
        ),
        commits=(BASE, HEAD),
        fingerprints={(MACHINE, BASE): FP, (MACHINE, HEAD): FP},
        profiles={(MACHINE, c): tuple(ps) for c, ps in profiles.items()},
    )


def _runner(h: History, rng: np.random.Generator):  # type: ignore[no-untyped-def]
    """Re-measures a series from its own samples, each round a process with its offset."""
    by = {s.series: {p.commit: p for p in s.points} for s in h.series}

    def run(side: str, want: Sequence[SeriesId], r: int) -> dict[SeriesId, list[float]]:
        offset = math.exp(rng.normal(0.0, 0.02))
        commit = BASE if side == "base" else HEAD
        out = {}
        for s in want:
            p = by.get(s, {}).get(commit)
            if p is not None and p.samples:
                xs = rng.choice(p.samples, size=len(p.samples))
                out[s] = [float(x) * offset for x in xs]
        return out

    return run


def generate(seed: int) -> FindingsDocument:
    h = history(seed)
    doc = compare(h, BASE, HEAD, settings=Settings(resamples=200), floors={})
    if seed % 2:
        rng = np.random.default_rng(seed)
        doc = confirm(doc, _runner(h, rng), rounds=3, max_rounds=4)
    return doc


def views(doc: FindingsDocument) -> Iterator[tuple[str, str]]:
    yield "comment", render_comment(doc)
    yield "trimmed comment", render_comment_trimmed(doc)
    yield "summary", render_summary(doc)
    yield "compare text", compare_text(doc)
    yield "compare markdown", compare_markdown(doc)
    yield "terminal", terminal_text(doc, width=400, show_unchanged=True)
    yield "annotations", "\n".join(render_annotations(doc, max_per_kind=1000))
    cps = tuple(
        ChangePoint(
            f.series,
            MACHINE,
            BASE,
            HEAD,
            7,
            f.base,
            f.head,
            f.ratio,
            1e-4,
            f.unit,
            "regression" if f.ratio > 1 else "improvement",
            open=True,
        )
        for f in doc.findings
        if f.base is not None and f.head is not None and f.ratio is not None and f.ratio != 1
    )
    history_doc = FindingsDocument(
        mode="history", base=doc.base, head=doc.head, findings=doc.findings, change_points=cps,
        settings={"newest": {"checked": True, "source": "compare", "confirmed_run": False}},
    )  # fmt: skip
    yield "regressions", history_text(history_doc)
    yield "regressions comment", render_comment(history_doc)
    yield (
        "issues",
        "\n".join(render_title(c) + "\n" + render_body(c, change_point_key(c)) for c in cps),
    )


def problems(doc: FindingsDocument) -> list[str]:
    out = []
    tables = []
    for name, text in views(doc):
        found = check_pairs(text) + check_parts(text) + check_badges(text)
        found += check_parentheses(text.replace("\\", ""))
        out += [f"{name}: {p}" for p in found]
        tables.append((name, rows_by_label(text)))
    # the document's own figures, as format.py prints them, are the reference
    out += disagreements(tables)
    return out


@pytest.mark.parametrize("seed", range(DOCS))
def test_every_view_prints_the_rows_estimate_and_its_numbers_agree(seed: int) -> None:
    doc = generate(seed)
    assert doc.findings
    found = problems(doc)
    assert not found, f"seed {seed}: {found[:4]}"
    # Δ is head / base of the estimate, by definition, on every row
    for f in doc.findings:
        if f.base is not None and f.head is not None and f.base > 0:
            assert f.ratio == f.head / f.base
        if f.ci_low is not None and f.ci_high is not None and f.ratio is not None:
            assert f.ci_low <= f.ci_high


@pytest.mark.parametrize("seed", range(0, DOCS, 3))
def test_the_privileged_recomputation_prints_the_same_comment(seed: int) -> None:
    """The trust boundary recomputes with the same code: from the same numbers, the same
    findings and the same comment (here single-run: the rounds replay has its own test in
    ``tests/ci/test_same_comment.py``)."""
    h = history(seed)
    doc = compare(h, BASE, HEAD)
    again = recompute(h, base=BASE, head=HEAD)
    assert again.findings == doc.findings
    # the one difference: the privileged step says why it confirmed nothing (when it had
    # suspects to confirm)
    note = str(again.settings.get("confirm", "not run: the artifact holds no rounds"))
    assert note.startswith("not run: the artifact holds no rounds")
    same = dataclasses.replace(doc, settings=again.settings)
    assert render_comment(again) == render_comment(same)


def test_the_demos_mismatches_are_caught() -> None:
    """The rows issue 28 quoted from the demo fail the checks; honest ones pass."""
    for bad in (
        "| `4x64x256 fp32` | 40.7 µs → 68.1 µs | **+85 %** | x | y |",
        "| `b` | `aten::mul` | 1.70 µs → 1.73 µs | -0.6 % | |",
        "| `b` | `aten::mul` | 2.83 µs → 2.89 µs | -0.1 % | |",
        "| `b` | _total_ | 96.5 µs → 177 µs | +102 % | |",
    ):
        assert check_pairs(bad), bad
    for good in (
        "| `b` | `aten::mul` | 1.70 µs → 1.73 µs | +1.8 % | |",
        "| `b` | _total_ | 96.5 µs → 177 µs | +83 % | |",
        "| `b` | `aten::add` | 15,073 instructions → 9,206 instructions | -39 % | |",
    ):
        assert not check_pairs(good), good
    assert check_badges(
        "| `b` | `aten::add` | 15,073 instructions → 9,206 instructions | -39 % | more work ·"
        " more instructions (+5,867 per iteration, +39 %), exact |"
    )
    assert check_parts(
        "| `4x512 bf16` | 4.12 ms → 4.87 ms | **+18 %** (+12 … +25 %) | s |"
        " `aten::mul` +595 µs, 1 other op -5.00 µs |"
    )


def test_the_checks_fail_on_a_broken_renderer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A renderer that prints the head 5 % off, another whose instruction words ignore the
    sign: the property checks catch both on a generated document."""
    import neuronasv.format as fmt
    import neuronasv.report.rowwords as rowwords
    import neuronasv.report.sections as sections
    import neuronasv.report.tables as tables

    doc = generate(1)
    assert not problems(doc)
    real_pair = fmt.format_pair

    def off_pair(base, head, unit, **kw):  # type: ignore[no-untyped-def]
        return real_pair(base, None if head is None else head * 1.05, unit, **kw)

    with monkeypatch.context() as m:
        for mod in (tables, sections):
            m.setattr(mod, "format_pair", off_pair)
        assert any("| " in p or "→" in p for p in problems(doc))
    real_words = rowwords.count_words

    def loud(base, head):  # type: ignore[no-untyped-def]
        text = real_words(base, head)
        return text.replace("fewer instructions", "more instructions")

    with monkeypatch.context() as m:
        m.setattr(rowwords, "count_words", loud)
        fewer = [f for f in doc.findings if f.state.exact == "fewer"]
        if fewer:
            assert any("instructions" in p for p in problems(doc))
