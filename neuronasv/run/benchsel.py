"""``--bench`` checked before anything runs: a regular expression that selects something.

asv takes ``--bench`` as a regular expression searched in every benchmark name and, for a
parameterised benchmark, in every ``name(param, ...)`` (``asv/benchmarks.py``). A pattern
that does not compile used to surface as two tracebacks of asv's processes (exit 7); one
that matches nothing as "No benchmarks selected" buried in asv's progress. Here both are a
:class:`~neuronasv.errors.UsageError` (exit 2) before a worktree, a machine file or a
result is written: the pattern is compiled, and the checkout's suite is listed the way asv
lists it (``asv_runner``'s discovery, in a child process with the checkout first on the
import path, as asv's own discovery runs) and the nearest names are offered.

``python -m neuronasv.run.benchsel SUITE`` prints the suite's names, one a line.
"""

from __future__ import annotations

import difflib
import itertools
import json
import os
import re
import sys
from collections.abc import Iterable, Sequence

from neuronasv.errors import UsageError
from neuronasv.log import emit, say
from neuronasv.proc import run_process

__all__ = ["benchmark_names", "check_bench", "list_suite", "main", "nearest"]

#: Listing the suite imports its modules (no torch for the devtime suite); a stuck import
#: is not worth more than this before the run goes on without the check.
LIST_TIMEOUT = 120.0


def benchmark_names(benchmarks: Iterable[object]) -> list[str]:
    """asv's selectable names: each benchmark, and each ``name(params)`` combination."""
    out: list[str] = []
    for b in benchmarks:
        name = str(getattr(b, "name", ""))
        out.append(name)
        params = getattr(b, "params", None) or []
        for combo in itertools.product(*params):
            out.append(f"{name}({', '.join(str(p) for p in combo)})")
    return out


def list_suite(suite: str, *, python: str = sys.executable, cwd: str | None = None) -> list[str]:
    """The names of the suite at ``suite``, or ``[]`` when it cannot be listed here."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")  # the checkout is not our output
    root = cwd or os.path.dirname(os.path.abspath(suite))
    env["PYTHONPATH"] = os.pathsep.join(
        [root, *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    )
    try:
        res = run_process(
            [python, "-m", "neuronasv.run.benchsel", os.path.abspath(suite)],
            cwd=root,
            env=env,
            timeout=LIST_TIMEOUT,
            text=True,
        )
    except OSError:
        return []
    if res.returncode != 0:
        return []
    lines = str(res.stdout).strip().splitlines()
    try:
        names = json.loads(lines[-1]) if lines else None
    except ValueError:
        return []
    return [str(n) for n in names] if isinstance(names, list) else []


def nearest(pattern: str, names: Sequence[str], limit: int = 5) -> list[str]:
    """The names closest to ``pattern`` (plain names, not their parameter combinations)."""
    plain = sorted({n for n in names if "(" not in n})
    close = difflib.get_close_matches(pattern, plain, n=limit, cutoff=0.3)
    if close:
        return close
    # A part of the pattern may still name a module or class: prefer names sharing a word.
    words = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", pattern)}
    hits = [n for n in plain if any(w in n.lower() for w in words)]
    return (hits or plain)[:limit]


def check_bench(
    pattern: str | None,
    suite: str,
    *,
    python: str = sys.executable,
    names: Sequence[str] | None = None,
) -> None:
    """Raise :class:`UsageError` unless ``pattern`` compiles and selects a benchmark.

    ``names`` (tests) replaces the listing of ``suite``. A suite that cannot be listed
    here (an import that fails outside asv) is not refused: asv reports it as before.
    """
    if not pattern:
        return
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"--bench {pattern!r} is not a regular expression: {exc}") from None
    if not os.path.isdir(suite) and names is None:
        return
    listed = list(names) if names is not None else list_suite(suite, python=python)
    if not listed or any(regex.search(n) for n in listed):
        return
    near = nearest(pattern, listed)
    raise UsageError(
        f"--bench {pattern!r} matches none of the {len({n for n in listed if '(' not in n})}"
        f" benchmarks in {suite}" + (f"; nearest: {', '.join(near)}" if near else ""),
        hint="asv searches the pattern in 'module.Class.method' and 'name(param, ...)'",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Print the suite's selectable names as one JSON list (the child of :func:`list_suite`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        say("usage: python -m neuronasv.run.benchsel SUITE")
        return 2
    from asv_runner._aux import update_sys_path
    from asv_runner.discovery import disc_benchmarks

    root = os.path.abspath(args[0])
    update_sys_path(root)
    emit(json.dumps(benchmark_names(disc_benchmarks(root))), json=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
