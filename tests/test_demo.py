"""The demo's example change still applies, and its verdict sentence names the op."""

from __future__ import annotations

import os
import subprocess

from neuronasv.demo import DEFAULT_PATCH, verdict_sentence
from neuronasv.model import (
    Finding,
    FindingsDocument,
    OpContribution,
    RunRef,
    SeriesId,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_example_patch_applies_to_this_tree() -> None:
    proc = subprocess.run(
        ["git", "apply", "--check", os.path.join(ROOT, DEFAULT_PATCH)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def _doc(*findings: Finding) -> FindingsDocument:
    return FindingsDocument(
        mode="compare", base=RunRef("a" * 40, "m"), head=RunRef("b" * 40, "m"), findings=findings
    )


def test_verdict_prefers_the_attributed_total() -> None:
    op = Finding(
        series=SeriesId("b.op", (), "rmsnorm.naive", "4x512", "bfloat16", "aten::mul"),
        verdict="regression",
        unit="seconds",
        base=1e-5,
        head=1.4e-5,
        ratio=1.4,
    )
    total = Finding(
        series=SeriesId("b.total", (), "rmsnorm.naive", "4x512", "bfloat16"),
        verdict="regression",
        unit="seconds",
        base=3e-5,
        head=3.4e-5,
        ratio=1.13,
        ci_low=1.08,
        ci_high=1.2,
        attribution=(OpContribution("aten::mul", 1e-5, 1.4e-5, 4e-6, 0.95, 3.0, 4.0),),
    )
    sentence = verdict_sentence(_doc(op, total))
    assert sentence.startswith("Regression: rmsnorm.naive 4x512 bf16: +13 %")
    assert "aten::mul" in sentence and "explains 95 %" in sentence
    assert "1 more regressed series" in sentence


def test_verdict_without_regression_says_so() -> None:
    assert "No regression" in verdict_sentence(_doc())
