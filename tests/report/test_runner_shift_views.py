"""A slow runner is not a regression (issue 39), in every view.

Two runs of one CPU suite written as ``neuronasv run`` writes them (tests/shift_runs.py),
the head measured beside busy processes: every series +80–90 % with equal work and equal
instruction counts, the canary ×6, the load 0.4 → 5.6. Through the commands a user runs —
``compare`` (text, markdown, JSON), ``comment --dry-run``, ``summary``, ``publish`` — every
view says in its first line that the runner shifted, with the shared factor and the
machine's state, names no op as a cause and fires no gate; every row that moved shows its
equal counts. A real change on top (one op's time and instructions +30 %) is still named.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from neuronasv.cli import main
from neuronasv.model import FindingsDocument
from tests.shift_runs import BASE, HEAD, MACHINE, Change, write_pair

SHIFTED = "the runner shifted, not the code: 20 of 20 series with equal work and instructions"
#: what the sidecars recorded, said in the first line
MACHINE_STATE = (
    "base → head: load 0.4–0.5 → 4.9–5.6 (2 CPUs), clock 2,596 → 2,596 MHz, canary +500 %"
)


def _views(tmp_path: Path, **kw: object) -> dict[str, str]:
    """Every view of one loaded pair, as the commands write them."""
    results = write_pair(tmp_path / "results", **kw)  # type: ignore[arg-type]
    out: dict[str, str] = {}
    common = [BASE[:8], HEAD[:8], "--results-dir", str(results), "--machine", MACHINE,
              "--no-floor"]  # fmt: skip
    for fmt in ("text", "markdown", "json"):
        path = tmp_path / f"compare.{fmt}"
        assert main(["compare", *common, "--format", fmt, "--out", str(path)]) == 0
        out[fmt] = path.read_text()
    findings = str(tmp_path / "compare.json")
    body = tmp_path / "comment.md"
    assert main(["comment", "--pr", "7", "--report", findings, "--dry-run",
                 "--out", str(tmp_path / "dry.json"), "--body-out", str(body)]) == 0  # fmt: skip
    out["comment"] = body.read_text()
    summary = tmp_path / "summary.md"
    assert main(["summary", "--report", findings, "--out", str(summary)]) == 0
    out["summary"] = summary.read_text()
    site = tmp_path / "site"
    assert main(["publish", "--results-dir", str(results), "--findings", findings,
                 "--out", str(site)]) == 0  # fmt: skip
    out["site"] = (site / "index.html").read_text()
    # markdown escapes punctuation (``\:``, ``\.``): read every view as its reader does
    return {k: re.sub(r"\\(.)", r"\1", t) for k, t in out.items()}


def _first_line(text: str) -> str:
    return next(ln for ln in text.splitlines() if ln.strip() and not ln.startswith("<!--"))


@pytest.mark.parametrize("seed", range(3))
def test_an_aa_comparison_under_load_says_the_runner_shifted_in_every_view(
    tmp_path: Path, seed: int
) -> None:
    v = _views(tmp_path, seed=seed)
    for name in ("text", "markdown", "comment", "summary"):
        first = _first_line(v[name])
        assert SHIFTED in first, (name, first)
        assert MACHINE_STATE in first, (name, first)
    doc = FindingsDocument.loads(v["json"])
    assert doc.runner is not None and doc.runner.status == "runner"
    assert json.loads(v["json"])["runner"]["factor"] == doc.runner.factor
    assert "the runner shifted, not the code" in v["site"]
    # the one shared factor, printed as the document holds it, in every view
    shared = f"moved {_pct(doc.runner.factor)} together"
    assert all(shared in v[n] for n in ("text", "markdown", "comment", "summary", "site"))
    # no op named as a cause, no gate fired, nothing slower: the headline says so
    heading = _first_line(v["comment"])
    assert heading.startswith("## :white_check_mark: neuronasv: the runner shifted")
    assert "no change beyond the runner's shift in 40 series" in heading
    assert "cause" not in heading and "aten::" not in heading
    assert "slower (" not in v["comment"] and "faster (" not in v["comment"]
    assert v["text"].rstrip().splitlines()[-1] == (
        "summary: 20 within the runner's shift, no gate rule fired"
    )
    # every device-time row that moved shows its equal counts beside its time
    rows = [ln for ln in v["comment"].splitlines() if "time within the runner's shift" in ln]
    assert len(rows) == 20
    assert all("same work, same instructions (exact)" in ln for ln in rows)


def _pct(factor: float | None) -> str:
    from neuronasv.format import format_delta_pct

    return format_delta_pct(factor)


def test_a_real_change_under_the_same_load_is_still_named(tmp_path: Path) -> None:
    cfg = ("vision.vit", "8x64", "float32")
    v = _views(tmp_path, change=Change(cfg, "aten::mm"))
    heading = _first_line(v["comment"])
    assert heading.startswith("## :red_circle: neuronasv: the runner shifted, not the code: 15 of")
    assert "fails (gate: more instructions, time undecided, 1 row)" in heading
    assert "vision.vit 8x64 fp32 (via aten::mm)" in heading
    assert "more instructions" in heading and "time within the runner's shift" in heading
    doc = FindingsDocument.loads(v["json"])
    assert [c.workload for c in doc.causes] == ["vision.vit"]


def test_a_single_run_time_with_equal_counts_is_a_suspect_not_a_cause(tmp_path: Path) -> None:
    """No load shift (the canary held, so the rows are judged as measured), but the head's
    rows read slower from one run a side: with the same work and the same instructions
    (exact), they are suspects to re-measure, never a headline cause."""
    v = _views(tmp_path, canary=1.0)
    doc = FindingsDocument.loads(v["json"])
    assert doc.runner is not None and doc.runner.status == "series"
    heading = _first_line(v["comment"])
    assert "while the canary held (+0.0 %): not the runner's shift" in heading
    assert heading.endswith(
        " · no gate rule fired; no cause: 20 rows moved in a single run with same work, same"
        " instructions (exact), suspects to re-measure"
    )
    assert "aten::" not in heading
    slower = [ln for ln in v["comment"].splitlines() if "slower, single run" in ln]
    assert slower and all(
        "same work, same instructions (exact) · slower, single run, a suspect to re-measure" in ln
        for ln in slower
    )
