"""The facade gives what the commands give, from keyword arguments (no argv)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from neuronasv.api import Results
from neuronasv.errors import UsageError
from neuronasv.report.document import render_document
from tests.analyse.conftest import DATA

PR = os.path.join(DATA, "pr")


def test_compare_regressions_and_publish(tmp_path: Path) -> None:
    results = Results(PR)
    doc = results.compare("1a2b", "5e6f")
    assert doc.base is not None and doc.head is not None
    assert (doc.base.commit[:8], doc.head.commit[:8]) == ("1a2b3c4d", "5e6f7a8b")
    text = render_document(doc, "text")
    # The same verdict lines `neuronasv compare 1a2b 5e6f --results-dir PR` prints.
    assert "rmsnorm.naive 4x512 bf16 · aten::mul: +19 % (CI 17–22 %)" in text
    assert sum(f.state.direction == "worse" for f in doc.findings) == 2
    history = results.regressions()
    assert history.mode == "history"
    report = results.publish(tmp_path / "site", findings=[history])
    assert report.series and (tmp_path / "site" / "index.html").is_file()
    with pytest.raises(UsageError):
        results.compare("1a2b", "ffffffff")
    assert results.reload() is results


def test_the_module_functions_are_the_commands_steps(tmp_path: Path) -> None:
    """``api.compare``/``regressions``/``publish`` take the commands' options and give what
    the commands print (the demo calls these)."""
    from neuronasv import api

    doc = api.compare(api.CompareOptions(base="1a2b", head="5e6f", results_dir=PR, repo=None))
    assert "rmsnorm.naive 4x512 bf16 · aten::mul: +19 % (CI 17–22 %)" in render_document(
        doc, "text"
    )
    history = api.regressions(api.RegressionsOptions(results_dir=PR, repo=None))
    assert history.mode == "history"
    done = api.publish(api.PublishOptions(out=str(tmp_path / "site"), results_dir=PR,
                                          findings=(history,), no_cache=True))  # fmt: skip
    assert done.report.series and done.line().startswith("published ")
    assert (tmp_path / "site" / "index.html").is_file()
