"""Realistic findings documents for the report golden tests.

``python -m tests.report.fixtures`` rewrites ``tests/data/report/*.findings.json`` from the
builders below; the tests read the JSON files (so the model's ``from_json`` is exercised)
and compare renders with the ``*.md`` / ``*.txt`` golden files next to them
(``NEURONASV_UPDATE_GOLDEN=1`` rewrites those).

Numbers follow the seed's Trainium example (three ``aten::mul`` = 2.355 ms device time on a
4×512 bf16 RMSNorm) and the spreads measured by ``bench/canary_noise.py`` (docs/workloads.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from neuronasv.analyse.causes import with_causes
from neuronasv.analyse.states import with_states
from neuronasv.model.findings import (
    ChangePoint,
    EnvChange,
    Finding,
    FindingsDocument,
    OpContribution,
    RunRef,
    SeriesId,
)
from tests.builders import finding as build

DATA = Path(__file__).resolve().parent.parent / "data" / "report"

BASE_SHA = "3f9c2a1b7d4e5f60718293a4b5c6d7e8f9012345"
HEAD_SHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"

HOSTILE_OP = "aten::mul|<img src=x onerror=alert(1)>@octocat [x](http://evil)"

FP_BASE = {
    "backend": "neuron",
    "python": "3.11.9",
    "torch": "2.5.1",
    "torch_neuronx": "2.5.1.2.4.0",
    "neuronx_cc": "2.15.128.0",
    "cuda": "none",
    "driver": "2.19.64.0",
    "device_model": "trn2.48xlarge",
    "cpu_model": "AMD EPYC 9R14",
    "platform": "Linux-6.8",
}
FP_HEAD = {**FP_BASE, "torch_neuronx": "2.5.1.2.5.0", "neuronx_cc": "2.16.372.0"}


def sid(workload: str, shape: str, dtype: str, op: str | None = None) -> SeriesId:
    bench = "devtime.RMSNorm.devtime_op" if op else "devtime.RMSNorm.devtime_total"
    params = (workload, shape, dtype) + ((op,) if op else ())
    return SeriesId(bench, params, workload, shape, dtype, op)


def finding(
    series: SeriesId, verdict: str, base: float | None, head: float | None, **kw: object
) -> Finding:
    """A row as analyse leaves it. ``confirmed``: True — the rounds confirmed its time (its
    figures are the rounds'); False — the rounds re-measured it and did not (its time is
    then not decided); absent — a single run."""
    confirmed = kw.pop("confirmed", None)
    ci = (kw.pop("ci_low"), kw.pop("ci_high")) if "ci_low" in kw else None
    n = (int(kw.pop("n_base", 30)), int(kw.pop("n_head", 30)))  # type: ignore[call-overload]
    if confirmed is False:
        verdict = "noisy"
    return build(
        series, verdict, base=base, head=head, ci=ci, n=n,  # type: ignore[arg-type]
        source="first run" if confirmed is None else "rounds",
        confirmed=bool(confirmed), **kw,
    )  # fmt: skip


def compare_doc(
    op: str = "aten::mul",
    *,
    label: str = "feature/faster-norm",
    machine: str = "trn2-runner-1",
    ack: str | None = None,
    links: dict[str, str] | None = None,
) -> FindingsDocument:
    total = sid("rmsnorm.naive", "4x512", "bfloat16")
    findings = [
        finding(
            total,
            "regression",
            0.004120,
            0.004870,
            ci_low=1.121,
            ci_high=1.251,
            p_value=0.00031,
            p_adjusted=0.0012,
            noise_base=0.041,
            noise_head=0.052,
            reason=(
                "+18.2 % (CI 12.1–25.1 %), p=0.0012 < 0.01 after Holm, above the 5 % minimum effect"
            ),
            warnings=(
                "head has 12 of 30 samples after outlier removal; fewer than the 20 recommended",
            ),
            attribution=(
                OpContribution(op, 0.002355, 0.002950, 0.000595, 0.793, 3, 4),
                OpContribution("aten::add", 0.000410, 0.000520, 0.000110, 0.147, 1, 1),
                OpContribution("aten::mean", 0.000600, 0.000650, 0.000050, 0.067, 1, 1),
                OpContribution("aten::rsqrt", 0.000300, 0.000295, -0.000005, -0.007, 1, 1),
            ),
            confirmed=True,
        ),
        finding(
            sid("rmsnorm.naive", "4x512", "bfloat16", op),
            "regression",
            0.002355,
            0.002950,
            ci_low=1.18,
            ci_high=1.33,
            p_value=0.00002,
            p_adjusted=0.0001,
            calls_base=3,
            calls_head=4,
            confirmed=True,
        ),
        finding(
            sid("rmsnorm.naive", "4x512", "bfloat16", "aten::add"),
            "regression",
            0.000410,
            0.000520,
            ci_low=1.15,
            ci_high=1.41,
            p_value=0.0008,
            p_adjusted=0.0031,
            calls_base=1,
            calls_head=1,
            confirmed=True,
        ),
        finding(
            sid("rmsnorm.compiled", "8x1024x4096", "bfloat16"),
            "regression",
            0.0312,
            0.0331,
            ci_low=1.031,
            ci_high=1.092,
            p_value=0.0021,
            p_adjusted=0.0063,
            reason="+6.1 % (CI 3.1–9.2 %)",
            confirmed=False,
        ),
        finding(
            sid("rmsnorm.fused", "4x512", "bfloat16"),
            "improvement",
            0.001830,
            0.001603,
            ci_low=0.842,
            ci_high=0.913,
            p_value=0.00004,
            p_adjusted=0.0002,
        ),
        finding(
            sid("rmsnorm.naive", "8x1024x4096", "bfloat16", "aten::pow"),
            "noisy",
            0.0105,
            0.0121,
            noise_base=0.31,
            noise_head=0.42,
            calls_base=1,
            calls_head=1,
            reason="IQR/median 42 % on head exceeds the 25 % noise limit",
        ),
        finding(
            SeriesId(
                "transformer.Block.devtime_total",
                ("2x128", "float32"),
                "transformer.block",
                "2x128",
                "float32",
            ),
            "failed",
            0.0521,
            None,
            reason="CaptureError: device time 0 on neuron (failed capture)",
        ),
        finding(
            sid("rmsnorm.compiled", "4x512", "bfloat16", "## Call CompiledFxGraph <hash> ##"),
            "new",
            None,
            0.000211,
            calls_head=1,
        ),
        finding(
            sid("rmsnorm.naive", "4x512", "bfloat16", "aten::_to_copy"),
            "removed",
            0.000050,
            None,
            calls_base=1,
        ),
        finding(
            sid("rmsnorm.fused", "8x1024x4096", "bfloat16"),
            "regression",
            0.0203,
            0.0217,
            ci_low=1.04,
            ci_high=1.10,
            p_value=0.001,
            p_adjusted=0.004,
            acknowledged=ack or "expected: the fused kernel now trades latency for memory (PR 812)",
        ),
        finding(
            SeriesId("benchmarks.TimeSuite.time_sum", ("1000", "'float32'")),
            "unchanged",
            0.0000131,
            0.0000133,
            ci_low=0.98,
            ci_high=1.05,
            p_value=0.41,
            n_base=10,
            n_head=10,
        ),
    ]
    ops = ["aten::mul", "aten::mean", "aten::add", "aten::rsqrt", "aten::pow", "aten::to"]
    for wl in ("rmsnorm.naive", "rmsnorm.fused", "rmsnorm.compiled"):
        for shape in ("4x512", "8x1024x4096"):
            for o in ops:
                if (wl, shape, o) in {
                    ("rmsnorm.naive", "4x512", "aten::add"),
                    ("rmsnorm.naive", "8x1024x4096", "aten::pow"),
                }:
                    continue
                if o == "aten::mul" and wl == "rmsnorm.naive" and shape == "4x512":
                    continue
                if len(findings) >= 11 + 33:
                    break
                scale = 0.0002 if shape == "4x512" else 0.004
                base = scale * (1 + ops.index(o) * 0.37)
                findings.append(
                    finding(
                        sid(wl, shape, "bfloat16", o),
                        "unchanged",
                        base,
                        base * 1.004,
                        ci_low=0.97,
                        ci_high=1.04,
                        p_value=0.52,
                        calls_base=1,
                        calls_head=1,
                    )
                )
    doc = FindingsDocument(
        mode="compare",
        created="2025-11-30T06:00:00Z",
        base=RunRef(
            BASE_SHA,
            machine,
            FP_BASE,
            "main",
            "https://example.github.io/neuronasv/traces/3f9c2a1b/trace.json",
        ),
        head=RunRef(
            HEAD_SHA,
            machine,
            FP_HEAD,
            label,
            "https://example.github.io/neuronasv/traces/a1b2c3d4/trace.json",
        ),
        findings=tuple(findings),
        env_changes=(
            EnvChange("neuronx_cc", "2.15.128.0", "2.16.372.0"),
            EnvChange("torch_neuronx", "2.5.1.2.4.0", "2.5.1.2.5.0"),
        ),
        settings={
            "alpha": 0.01,
            "correction": "holm",
            "min_effect": 0.05,
            "test": "mann-whitney",
            "bootstrap": 2000,
            "noise_limit": 0.25,
        },
        load_errors=(
            "results/trn2-runner-1/a1b2c3d4-existing.json: not valid JSON"
            " (Expecting ',' at line 812 column 3); the file may be truncated",
        ),
        links=links
        if links is not None
        else {
            "history_url": "https://example.github.io/neuronasv/#rmsnorm.naive",
            "report_url": "https://github.com/example/kernels/actions/runs/123456789",
        },
    )
    return with_causes(with_states(doc))  # computed once, as compare and confirm store them


def hostile_doc() -> FindingsDocument:
    evil = (
        "@octocat <script>alert(1)</script> | [x](javascript:alert(1))"
        " ![i](http://evil/i.png)\n## hi"
    )
    return compare_doc(
        HOSTILE_OP,
        label="main|`x`<b>@admins</b>\n| a | b |",
        machine="trn2|<i>@org/team</i>",
        ack=evil,
        links={
            "history_url": "javascript:alert(1)",
            "report_url": "https://example.com/report?a=1&b=<x>)(",
            "evil_url": "data:text/html,<script>alert(1)</script>",
        },
    )


def quiet_doc() -> FindingsDocument:
    doc = compare_doc()
    keep = tuple(
        replace(
            f,
            state=replace(f.state, time="noise", confirmed=False),
            estimate=replace(f.estimate, source="first run"),
            attribution=(),
            warnings=(),
            acknowledged=None,
        )
        for f in doc.findings
        # the single-run undecided row goes; the refuted re-measured one stays (as before)
        if f.state.presence == "both" and (f.state.time != "undecided" or f.remeasured)
    )
    return with_states(FindingsDocument(
        mode="compare",
        created=doc.created,
        base=doc.base,
        head=RunRef(
            doc.head.commit,
            doc.head.machine,
            FP_BASE,  # type: ignore[union-attr]
            doc.head.label,
        ),  # type: ignore[union-attr]
        findings=keep,
        settings=doc.settings,
    ))  # fmt: skip


def history_doc() -> FindingsDocument:
    m = "trn2-runner-1"
    return FindingsDocument(
        mode="history",
        created="2025-11-30T06:00:00Z",
        base=None,
        head=RunRef(HEAD_SHA, m, FP_HEAD, "main"),
        change_points=(
            ChangePoint(
                sid("rmsnorm.naive", "4x512", "bfloat16", "aten::mul"),
                m,
                "0123456789abcdef0123456789abcdef01234567",
                "89abcdef0123456789abcdef0123456789abcdef",
                41,
                0.002355,
                0.002950,
                1.2527,
                0.0004,
                "seconds",
                "regression",
                open=True,
                env_changes=(EnvChange("neuronx_cc", "2.15.128.0", "2.16.372.0"),),
                reason="e-divisive, window 50, p=0.0004",
            ),
            ChangePoint(
                sid("rmsnorm.fused", "4x512", "bfloat16"),
                m,
                "1111111111111111111111111111111111111111",
                "2222222222222222222222222222222222222222",
                12,
                0.00183,
                0.00160,
                0.874,
                0.0001,
                "seconds",
                "improvement",
            ),
            ChangePoint(
                sid("rmsnorm.compiled", "4x512", "bfloat16"),
                m,
                "3333333333333333333333333333333333333333",
                "4444444444444444444444444444444444444444",
                20,
                0.00090,
                0.00101,
                1.122,
                0.0002,
                "seconds",
                "regression",
                open=False,
            ),
            ChangePoint(
                sid("rmsnorm.naive", "8x1024x4096", "bfloat16"),
                m,
                "5555555555555555555555555555555555555555",
                "6666666666666666666666666666666666666666",
                30,
                0.0409,
                0.0441,
                1.078,
                0.0003,
                "seconds",
                "regression",
                open=True,
                acknowledged="known: compiler 2.16 schedules pow differently",
            ),
        ),
        links={"history_url": "https://example.github.io/neuronasv/"},
    )


DOCS = {
    "compare": compare_doc,
    "hostile": hostile_doc,
    "quiet": quiet_doc,
    "history": history_doc,
}


def main() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    for name, make in DOCS.items():
        (DATA / f"{name}.findings.json").write_text(make().dumps(), encoding="utf-8")
        print(DATA / f"{name}.findings.json")


if __name__ == "__main__":
    main()
