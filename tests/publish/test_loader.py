"""The fast paths of the history loader: msgspec with a NaN pre-pass, one git call."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from neuronasv.errors import CorruptResultsError
from neuronasv.store.asvresults import asv_float, decode_asv_json
from neuronasv.store.git import Git, SubprocessGit
from neuronasv.store.history import load_history


def _unmark(v: Any, marked: bool) -> Any:
    if isinstance(v, list):
        return [_unmark(x, marked) for x in v]
    if isinstance(v, dict):
        return {k: _unmark(x, marked) for k, x in v.items()}
    return asv_float(v, marked)


def _same(a: Any, b: Any) -> bool:
    # NaN != NaN: compare through repr, which also tells 1 from 1.0
    return repr(a) == repr(b)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1.5, NaN, -Infinity, Infinity, null, 2]}',
        '{"NaN": "NaN", "s": "x NaN y", "v": [NaN]}',  # tokens inside strings stay text
        '{"q": "say \\"NaN\\"", "v": [NaN, 1e-300]}',  # escaped quotes: stdlib path
        '{"nan": "nan", "v": [NaN]}',  # the marker text itself present: stdlib path
        '{"u": "caf\\u00e9", "v": [-0.0, 5e-324, 123456789012345678]}',
        "[]",
    ],
)
def test_decode_matches_stdlib_json(text: str) -> None:
    data, marked = decode_asv_json(text.encode(), "f.json")
    assert _same(_unmark(data, marked), json.loads(text))


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"a": [1, 2', "not valid JSON"),
        (b"", "empty file"),
        (b'{"a": "\xff"}', "not UTF-8"),
        # Values in range: refused by the decoder, before Python converts them.
        (b'{"v": [1' + b"0" * 400 + b"]}", "an integer of 401 digits is out of range"),
        (b'{"v": [1e400]}', "the number 1e400 is out of range"),
        (b'{"v": [NaN, -1' + b"0" * 5000 + b"]}", "an integer of 5001 digits is out of range"),
    ],
)
def test_decode_errors_name_the_file(raw: bytes, reason: str) -> None:
    with pytest.raises(CorruptResultsError, match=f"f.json: {reason}"):
        decode_asv_json(raw, "f.json")


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def test_commit_order_one_call_plus_commits_no_ref_reaches(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    main = []
    for i in range(3):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"c{i}")
        main.append(_git(repo, "rev-parse", "HEAD"))
    _git(repo, "checkout", "-q", "-b", "pr", main[1])
    _git(repo, "commit", "-q", "--allow-empty", "-m", "pr")
    pr = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "branch", "-q", "-D", "pr")  # a merged-and-deleted PR branch: no ref
    calls: list[list[str]] = []
    real = SubprocessGit()

    def counting(args: Any, **kw: Any) -> Any:
        calls.append(list(args))
        return real(args, **kw)

    git = Git(repo, transport=counting)
    unknown = "0" * 40
    got = git.commit_order([*main, pr, unknown])
    assert got.index(main[1]) < got.index(pr)  # the PR commit sits after its parent
    assert set(got) == {*main, pr} and got.index(main[0]) == 0
    assert len(calls) == 2  # --all, then once more for the off-ref commit
    calls.clear()
    assert git.commit_order(main) == main and len(calls) == 1


def test_loader_on_the_synthetic_history(tiny_history: Path) -> None:
    """Value for value against the asv files read with the stdlib json module."""
    rdir = tiny_history / "results"
    h = load_history(rdir, repo=tiny_history / "repo")
    assert h.load_errors == ()
    by_label = {(s.series.benchmark, s.series.params): s for s in h.series}
    checked = 0
    for f in sorted((rdir / "synth-runner").glob("*-existing-py_venv.json")):
        doc = json.loads(f.read_text())
        cols = doc["result_columns"]
        for name, row in doc["results"].items():
            res, params = row[cols.index("result")], row[cols.index("params")]
            samples = row[cols.index("samples")]
            for i, p in enumerate(params[0]):
                pt = by_label[(name, (p,))].at(doc["commit_hash"])
                if math.isnan(res[i]):
                    assert pt is None  # asv NaN = not run in this commit: no point
                    continue
                assert pt is not None and pt.value == res[i]
                assert pt.samples == tuple(samples[i])
                checked += 1
    assert checked > 400


def test_prepass_rewrites_bare_tokens_only_outside_strings() -> None:
    from neuronasv.store.asvresults import _mark_nonfinite

    raw = b'{"NaN": "a NaN", "v": [NaN, -Infinity], "w": "Infinity", "x": Infinity}'
    assert _mark_nonfinite(raw) == (
        b'{"NaN": "a NaN", "v": ["nan", "-inf"], "w": "Infinity", "x": "inf"}'
    )
    assert _mark_nonfinite(b'{"v": [1.0]}') == b'{"v": [1.0]}'
    assert _mark_nonfinite(b'{"q": "\\"", "v": NaN}') is None  # escapes: stdlib decides
