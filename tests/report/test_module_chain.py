"""A transformer block comparison with an injected MLP slowdown: total -> module -> op.

The base is a transformer.block profile shaped like the H200 capture (module times and
per-op module shares); the head is the same with the MLP's aten::mm made 30 % slower,
everything else left as it was (same per-sample noise). The history carries the asv
series neuronasv run would record (total, ``module:<path>`` and op series, in seconds) and
the sidecar profiles, and goes through the real comparison and the real renderers.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from neuronasv.analyse.pairwise import Settings, compare
from neuronasv.format import format_delta_pct
from neuronasv.model import (
    FindingsDocument,
    History,
    ModuleProfile,
    OpProfile,
    ProfileDocument,
    SeriesId,
    WorkloadProfile,
)
from neuronasv.model.profile import module_series_name
from neuronasv.report import render_comment, terminal_text
from tests.profile_history import history_from_profiles

BASE = "a" * 40
HEAD = "b" * 40
WL, SHAPE, DTYPE = "transformer.block", "1x2048x4096x32", "bfloat16"
N = 10
# µs per iteration by (module, op), like the H200 capture of this block
PARTS = {
    ("block.attn_norm", "aten::mul"): 46.5,
    ("block.attn_norm", "aten::pow"): 73.8,
    ("block.attn", "aten::mm"): 349.0,
    ("block.attn", "aten::mul"): 91.7,
    ("block.attn", "aten::_cudnn_attention_forward"): 83.7,
    ("block.attn", "aten::cat"): 73.4,
    ("block.attn", "aten::add"): 83.4,
    ("block.mlp_norm", "aten::mul"): 46.2,
    ("block.mlp_norm", "aten::pow"): 70.3,
    ("block.mlp", "aten::mm"): 709.7,
    ("block.mlp", "aten::mul"): 33.0,
    ("block.mlp", "aten::silu"): 33.0,
}


def _profile(slow_mlp_mm: float) -> WorkloadProfile:
    rng = np.random.default_rng(7)  # the same noise on both sides: only the injection differs
    noise = 1.0 + 0.004 * rng.standard_normal((N, len(PARTS)))
    parts = {k: [v * noise[i, j] for i in range(N)] for j, (k, v) in enumerate(PARTS.items())}
    parts[("block.mlp", "aten::mm")] = [x * slow_mlp_mm for x in parts[("block.mlp", "aten::mm")]]
    ops: dict[str, list[float]] = {}
    mods: dict[str, list[float]] = {}
    for (path, op), xs in parts.items():
        for name, acc in ((op, ops), (path, mods)):
            cur = acc.setdefault(name, [0.0] * N)
            acc[name] = [a + x for a, x in zip(cur, xs, strict=True)]
    total = [sum(xs[i] for xs in mods.values()) for i in range(N)]
    op_rows = []
    for op, xs in ops.items():
        share = {p: sum(parts[(p, o)]) / sum(xs) for (p, o) in parts if o == op}
        op_rows.append(OpProfile(op, 1.0, tuple(xs), tuple(xs), modules=share))
    modules = [
        ModuleProfile("", tuple(total), (0.0,) * N),
        ModuleProfile("block", tuple(total), (0.0,) * N),
        *(ModuleProfile(p, tuple(xs), tuple(xs)) for p, xs in sorted(mods.items())),
    ]
    return WorkloadProfile(
        WL, "cuda", SHAPE, DTYPE, tuple(total), tuple(op_rows), modules=tuple(modules)
    )


def _history(base: WorkloadProfile, head: WorkloadProfile) -> History:
    modules = {m.path for m in base.modules}
    names: list[str | None] = [None, *(module_series_name(p) for p in sorted(modules) if p)]
    names += [o.op for o in base.ops]

    def series_id(op: str | None) -> SeriesId:
        bench = "transformer.Block.devtime_total" if op is None else "transformer.Block.devtime_op"
        return SeriesId(bench, (repr(SHAPE), repr(DTYPE), *([repr(op)] if op else [])),
                        WL, SHAPE, DTYPE, op)  # fmt: skip

    return history_from_profiles(
        base, head, names, series_id, commits=(BASE, HEAD), machine="h200",
        fingerprint={"backend": "cuda", "device_model": "NVIDIA H200"},
    )  # fmt: skip


def _doc() -> FindingsDocument:
    h = _history(_profile(1.0), _profile(1.3))
    return compare(h, BASE, HEAD, settings=Settings(resamples=300), floors={})


def test_the_comment_walks_from_the_block_to_the_mlp_to_its_matmul() -> None:
    doc = _doc()
    total = next(f for f in doc.findings if f.series.op is None)
    assert total.state.time == "slower"
    chain = [(a.op, a.delta > 0) for a in total.module_chain]
    assert chain == [("", True), ("module:block", True), ("module:block.mlp", True),
                     ("aten::mm", True)]  # fmt: skip
    mm = total.module_chain[-1]
    assert mm.base is not None and mm.head is not None
    assert abs(mm.head / mm.base - 1.3) < 1e-3  # the op's time within the MLP
    # Written and read back (the findings document carries the chain).
    assert FindingsDocument.loads(doc.dumps()) == doc

    body = render_comment(doc)
    # total (block) +13 % ← block.mlp +27 % ← aten::mm +30 %, in the cause's table row: the
    # chain starts at the row's own change (the same Δ the row prints), the top module
    # that is the whole block named beside it
    m = re.search(
        r"total \(`block`\) \+(\d+(?:\.\d)?) % ← `block\.mlp` \+(\d+(?:\.\d)?) % ← `aten::mm`"
        r" \+30 %",
        body,
    )
    assert m, body
    block_pct, mlp_pct = float(m.group(1)), float(m.group(2))
    assert 5.0 < block_pct < mlp_pct < 30.0
    assert f"+{m.group(1)} %" == format_delta_pct(total.ratio)
    row = next(line for line in body.splitlines() if "← `aten::mm`" in line)
    assert row.startswith("| `1x2048x4096x32 bf16` |")
    # The module series are series like the ops (in the full list), never an op of a cause.
    assert "module:block.mlp" in body
    assert "`module:block.mlp`" not in row
    assert "block.mlp" in terminal_text(doc) and "← aten::mm" in terminal_text(doc)


def test_no_chain_without_module_times_or_when_no_module_moved() -> None:
    base, head = _profile(1.0), _profile(1.3)
    plain = _history(replace(base, modules=()), replace(head, modules=()))
    doc = compare(plain, BASE, HEAD, settings=Settings(resamples=300), floors={})
    total = next(f for f in doc.findings if f.series.op is None)
    assert total.state.time == "slower" and total.module_chain == ()
    assert " ← " not in render_comment(doc)


def test_a_module_series_is_re_measured_from_the_profile_like_an_op() -> None:
    from neuronasv.analyse.confirm import samples_from_profile

    prof = _profile(1.0)
    doc = ProfileDocument("cuda", (prof,))
    mlp = SeriesId("b", (), WL, SHAPE, DTYPE, "module:block.mlp")
    gone = SeriesId("b", (), WL, SHAPE, DTYPE, "module:block.gone")
    got = samples_from_profile(doc, [mlp, gone])
    module = prof.module("block.mlp")
    assert module is not None
    assert got == {mlp: [x * 1e-6 for x in module.device_time_us]}
