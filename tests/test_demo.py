"""The demo's example change still applies, and its verdict sentence names the op."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace

from neuronasv.demo import DEFAULT_PATCH, verdict_sentence
from neuronasv.model import (
    Finding,
    FindingsDocument,
    OpContribution,
    RunRef,
    SeriesId,
    WorkChange,
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


def test_verdict_names_the_cause_from_the_work_evidence() -> None:
    op = Finding(
        series=SeriesId("b.op", (), "rmsnorm.naive", "4x512", "bfloat16", "aten::mul"),
        verdict="regression",
        unit="seconds",
        base=1e-5,
        head=1.4e-5,
        ratio=1.4,
        confirmed=True,
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
        confirmed=True,
        attribution=(OpContribution("aten::mul", 1e-5, 1.4e-5, 4e-6, 0.95, 3.0, 4.0),),
    )
    work = WorkChange(
        "rmsnorm.naive", "4x512", "bfloat16", "aten::mul", "calls", calls_base=3.0, calls_head=4.0
    )
    doc = replace(_doc(op, total), work=(work,))
    sentence = verdict_sentence(doc)
    assert sentence == (
        "Regression: rmsnorm.naive: +13.0 % at 4x512 bf16 — regression confirmed at 1/1"
        " configurations · work changed. aten::mul 3 → 4 calls."
    )


def test_verdict_without_regression_says_so() -> None:
    assert "No regression" in verdict_sentence(_doc())
