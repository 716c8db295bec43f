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
        # long digit runs in text (asv's hex versions, names), fractions and exponents
        '{"version": "1111111111111111111111111", "v": [NaN, 0.12345678901234567890123]}',
        '{"a": "x", "b": "99999999999999999999", "c": [1e-12345678901234567890, 2]}',
        "[]",
    ],
)
def test_decode_matches_stdlib_json(text: str) -> None:
    data, marked = decode_asv_json(text.encode(), "f.json")
    assert _same(_unmark(data, marked), json.loads(text))


@pytest.mark.parametrize(
    "raw",
    [
        b'{"version": "' + b"1" * 64 + b'", "v": [1.5, NaN]}',
        b'{"v": "4", "w": "' + b"7" * 30 + b'"}',
    ],
)
def test_long_digit_runs_in_strings_keep_the_fast_path(
    raw: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """asv writes each benchmark's ``version`` (a hex digest; the synthetic histories'
    is 64 ones): a long digit run there is text, and used to send every such file down
    the stdlib decoder (5x slower)."""
    import neuronasv.store.asvjson as ar

    def no_stdlib(*a: Any, **k: Any) -> Any:
        raise AssertionError("took the stdlib path")

    monkeypatch.setattr(ar, "parse_json", no_stdlib)
    data, marked = decode_asv_json(raw, "f.json")
    assert _same(_unmark(data, marked), json.loads(raw))


@pytest.mark.parametrize(
    "raw",
    [
        b'{"v": "x", "w": 1' + b"0" * 30 + b"}",  # a quote pair before it: still a number
        b'{"s": "' + b"1" * 30 + b'", "w": [2' + b"0" * 19 + b"]}",
        b'{"s": "a\\"b", "w": [2' + b"0" * 19 + b"]}",  # escaped quote: conservative path
    ],
)
def test_long_integers_outside_strings_are_still_refused(raw: bytes) -> None:
    with pytest.raises(CorruptResultsError, match="digits is out of range"):
        decode_asv_json(raw, "f.json")


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
    from neuronasv.store.asvjson import _mark_nonfinite

    raw = b'{"NaN": "a NaN", "v": [NaN, -Infinity], "w": "Infinity", "x": Infinity}'
    assert _mark_nonfinite(raw) == (
        b'{"NaN": "a NaN", "v": ["nan", "-inf"], "w": "Infinity", "x": "inf"}'
    )
    assert _mark_nonfinite(b'{"v": [1.0]}') == b'{"v": [1.0]}'
    assert _mark_nonfinite(b'{"q": "\\"", "v": NaN}') is None  # escapes: stdlib decides


def _outcome(raw: bytes) -> str:
    try:
        data, marked = decode_asv_json(raw, "f.json")
    except CorruptResultsError as exc:
        return f"error: {exc}"
    return repr(_unmark(data, marked))


def test_digit_run_scan_decides_as_the_stdlib_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """Random documents of digit-heavy tokens (long runs in strings, integers of 1-25
    digits, long fractions and exponents): the fast path gives exactly what the stdlib
    path gives, values or error."""
    import random

    import neuronasv.store.asvjson as ar

    rng = random.Random(29)

    def digits(n: int) -> str:
        return "".join(rng.choice("0123456789") for _ in range(n))

    def token() -> str:
        kind = rng.randrange(6)
        if kind == 0:
            return '"v' * rng.randrange(2) + digits(rng.randrange(1, 40)) + '"'
        if kind == 1:
            return "-" * rng.randrange(2) + str(rng.randrange(1, 10)) + digits(rng.randrange(25))
        if kind == 2:
            return "0." + "0" * rng.randrange(8) + digits(rng.randrange(1, 25))
        if kind == 3:
            sign = rng.choice(["", "+", "-"])
            return f"{rng.randrange(1, 10)}.5e{sign}{digits(rng.randrange(1, 22))}"
        if kind == 4:
            return rng.choice(["NaN", "null", "Infinity", "-Infinity", "0"])
        return '"' + digits(rng.randrange(15, 30)) + ' x"'

    docs = [("[" + ", ".join(token() for _ in range(rng.randrange(1, 8))) + "]").encode()
            for _ in range(400)]  # fmt: skip
    fast = [_outcome(d) for d in docs]
    monkeypatch.setattr(ar, "_long_integer", lambda raw: True)  # every file: stdlib path
    assert fast == [_outcome(d) for d in docs]
    assert sum(o.startswith("error") for o in fast) > 20  # long integers were refused
    assert sum(not o.startswith("error") for o in fast) > 50


def _long_integer_by_regex(raw: bytes) -> bool:
    """The reference: :data:`_LONG_DIGITS` searched outside strings (quotes counted; with
    a backslash anywhere, every match counts), those starting with a zero left out (no
    JSON number: msgspec refuses it and the stdlib decides, as the scan's doc says), and
    those right after a quote (text, or no JSON: a number cannot follow a closing quote)."""
    from neuronasv.store.asvjson import _LONG_DIGITS

    for m in _LONG_DIGITS.finditer(raw):
        if raw[m.start()] == 48 or raw[m.start() - 1 : m.start()] == b'"':
            continue
        if b"\\" in raw or raw.count(b'"', 0, m.start()) % 2 == 0:
            return True
    return False


def test_the_long_integer_scan_answers_as_the_regex_outside_strings() -> None:
    """The translated scan (run starts found by ``bytes.find``, then the regex's
    look-behinds and the quote count) against the regex itself, on texts mixing
    fractions, exponents (``e+``/``E-``), signs, quoted digit runs and integers just
    below and above the limit."""
    import random

    from neuronasv.model._codec import MAX_INT_DIGITS
    from neuronasv.store.asvjson import _long_integer

    rng = random.Random(40)
    n = MAX_INT_DIGITS
    parts = [b"0.", b"1.", b".", b"e", b"E", b"e+", b"E-", b"e-", b"+", b"-", b", ", b'"',
             b"[", b"]", b"x", b"0", b"\\"]  # fmt: skip
    seen = {True: 0, False: 0}
    for _ in range(4000):
        chunks = []
        for _ in range(rng.randint(1, 8)):
            chunks.append(rng.choice(parts))
            k = rng.choice([1, n - 1, n, n + 1, n + 5])
            chunks.append(str(rng.randint(1, 9)).encode() + b"7" * (k - 1))
        raw = b"".join(chunks)
        if rng.random() < 0.8:
            raw = raw.replace(b"\\", b"")
        want = _long_integer_by_regex(raw)
        assert _long_integer(raw) == want, raw
        seen[want] += 1
    assert min(seen.values()) > 500  # both answers were exercised
