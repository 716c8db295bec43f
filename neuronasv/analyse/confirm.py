"""Confirmation: re-measure base and head interleaved (ABAB) and keep what survives.

A suspected regression from a PR comparison may be a shift between the two profiling runs
(process start, memory layout, a noisy neighbour) rather than the code: the within-run
test of a single-run comparison cannot tell. :func:`confirm` re-measures the suspected
workloads, alternating base and head ``rounds`` times on the same machine (each round a
separate run, so slow drifts hit both sides alike), and judges the suspects with the
**rounds test** of :mod:`neuronasv.analyse.pairwise` (per-round log-ratios, moderated t,
every round the same direction; Holm over the suspects). Every series of a suspected
workload is re-measured (one profile gives them all) so the non-suspects lend their
round-to-round variance to the pooled prior; a history noise floor, when given, is the
prior instead. A finding is confirmed when the rounds give the same direction
(a *noisy* suspect that the rounds show significant becomes a confirmed
regression/improvement); ``Finding.confirmed`` is set either way and the reason says what
the rounds showed.

The measurement is injected (:data:`Runner`): tests pass a function; the CLI passes
:class:`WorktreeProfileRunner`, which checks out both commits as git worktrees and runs
``python -m neuronasv profile --json`` in each (that command writes a
``model.ProfileDocument``), with the worktree's own code on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from neuronasv.analyse.floors import FloorKey, NoiseFloor
from neuronasv.analyse.pairwise import PairInput, Settings, judge
from neuronasv.errors import CaptureError, StoreError
from neuronasv.model import Finding, FindingsDocument, Point, ProfileDocument, SeriesId

__all__ = [
    "Runner",
    "WorktreeProfileRunner",
    "confirm",
    "samples_from_profile",
    "suspects",
]

#: ``runner(side, series, round_index) -> {series: samples}``; ``side`` is "base" or
#: "head"; samples are in the series' unit (seconds for device time).
Runner = Callable[[str, Sequence[SeriesId], int], Mapping[SeriesId, Sequence[float]]]


def suspects(doc: FindingsDocument, *, include_noisy: bool = False) -> list[Finding]:
    """Findings worth re-measuring: unacknowledged regressions (and noisy ones if asked)."""
    kinds = ("regression", "noisy") if include_noisy else ("regression",)
    return [f for f in doc.findings if f.verdict in kinds and f.acknowledged is None]


def confirm(
    doc: FindingsDocument,
    runner: Runner,
    *,
    rounds: int = 3,
    settings: Settings | None = None,
    include_noisy: bool = True,
    floors: Mapping[FloorKey, NoiseFloor] | None = None,
) -> FindingsDocument:
    """Re-measure suspected series ABAB and set ``confirmed`` on them.

    Args:
        doc: a compare document.
        runner: measures one side for the given series (one call = one run).
        rounds: ABAB repetitions (3 = base, head, base, head, base, head); at least 2 for
            the rounds test (1 falls back to the single-run test on that one run).
        settings: test settings (default: those of a plain comparison).
        include_noisy: also re-measure ``noisy`` findings (a surviving one becomes a
            confirmed regression/improvement).
        floors: per-series noise floors from main-branch history (prior variance).

    Returns:
        The document with ``confirmed`` set on the re-measured findings.
    """
    st = settings or Settings()
    todo = suspects(doc, include_noisy=include_noisy)
    if not todo:
        return doc
    groups = {(f.series.workload, f.series.shape, f.series.dtype) for f in todo}
    extra = [
        f
        for f in doc.findings
        if f not in todo
        and f.series.workload is not None
        and (f.series.workload, f.series.shape, f.series.dtype) in groups
        and f.verdict not in ("new", "removed", "failed")
    ]
    measured = todo + extra
    wanted = [f.series for f in measured]
    per_round: dict[str, dict[SeriesId, list[tuple[float, ...]]]] = {"base": {}, "head": {}}
    for r in range(rounds):
        for side in ("base", "head"):
            got = runner(side, wanted, r)
            for sid in wanted:
                xs = tuple(float(x) for x in got.get(sid, ()))
                if xs:
                    per_round[side].setdefault(sid, []).append(xs)
    pairs = []
    for f in measured:
        b, h = per_round["base"].get(f.series, []), per_round["head"].get(f.series, [])
        pb, ph = [x for rnd in b for x in rnd], [x for rnd in h for x in rnd]
        pairs.append(
            PairInput(
                series=f.series,
                unit=f.unit,
                base=Point("base", 0, _median(pb), tuple(pb)) if pb else None,
                head=Point("head", 1, _median(ph), tuple(ph)) if ph else None,
                base_rounds=tuple(b) if len(b) == len(h) else (),
                head_rounds=tuple(h) if len(b) == len(h) else (),
            )
        )
    judged = judge(pairs, st, floors, family=range(len(todo)))
    again = {p.series: g for p, g in zip(pairs[: len(todo)], judged, strict=False)}
    out = []
    for f in doc.findings:
        g = again.get(f.series)
        if g is None or f not in todo:
            out.append(f)
            continue
        if f.verdict == "noisy":
            ok = g.verdict in ("regression", "improvement")
            verdict = g.verdict if ok else f.verdict
        else:
            ok = g.verdict == f.verdict
            # What does not survive the re-measurement is no longer a verdict: it joins the
            # noisy series (confirmed=False keeps the record), so headlines, statuses and
            # --fail-on count only what the rounds confirmed.
            verdict = f.verdict if ok else "noisy"
        method = (
            f"{rounds} interleaved rounds (ABAB, n={g.n_base}/{g.n_head})"
            if rounds >= 2
            else f"one re-measured run a side (n={g.n_base}/{g.n_head})"
        )
        note = f"{'confirmed' if ok else 'not confirmed'} by {method}: {g.reason}"
        new = replace(
            f,
            verdict=verdict,
            confirmed=ok,
            reason=f"{f.reason}; {note}",
            warnings=f.warnings + (() if ok else ("not confirmed on re-measurement",)),
        )
        if ok:  # the verdict now rests on the rounds: show their effect, CI and p
            new = replace(
                new,
                ratio=g.ratio,
                ci_low=g.ci_low,
                ci_high=g.ci_high,
                p_value=g.p_value,
                p_adjusted=g.p_adjusted,
            )
        out.append(new)
    return replace(
        doc,
        findings=tuple(out),
        settings={
            **doc.settings,
            "confirm": f"ABAB x{rounds}, same machine, rounds test"
            + (", history noise floors as prior" if floors else ", pooled prior"),
        },
    )


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def samples_from_profile(
    doc: ProfileDocument, series: Iterable[SeriesId], unit: str = "seconds"
) -> dict[SeriesId, list[float]]:
    """Samples per series from a profile document (µs -> the series unit)."""
    k = 1e-6 if unit == "seconds" else 1.0
    out: dict[SeriesId, list[float]] = {}
    for sid in series:
        for w in doc.workloads:
            if (w.name, w.shape, w.dtype) != (sid.workload, sid.shape, sid.dtype):
                continue
            if sid.op is None:
                out[sid] = [x * k for x in w.device_time_us]
            else:
                o = w.op(sid.op)
                if o is not None:
                    out[sid] = [x * k for x in o.self_device_time_us]
    return out


CommandRunner = Callable[[Sequence[str], str, Mapping[str, str]], int]


def _run_cmd(cmd: Sequence[str], cwd: str, env: Mapping[str, str]) -> int:
    # Output is kept out of the user's view (one profile table per round and side would
    # bury the verdict) and shown only when the command fails.
    proc = subprocess.run(
        list(cmd), cwd=cwd, env=dict(env), check=False, capture_output=True, text=True
    )
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-20:]
        print("\n".join(["$ " + " ".join(cmd), *tail]), file=sys.stderr)
    return proc.returncode


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class WorktreeProfileRunner:
    """Measure base and head from git worktrees with ``python -m neuronasv profile``.

    Attributes:
        repo: the git work tree holding both commits.
        base, head: full commit hashes.
        backend: backend name passed to ``profile --backend``.
        samples: samples per round (``profile --samples``).
        python: interpreter (default: this one, whose packages the worktrees share).
        workdir: where worktrees and JSON files go (default: a temporary folder).
        run_cmd: injected process runner ``(argv, cwd, env) -> returncode`` (tests).
        progress: where one line per re-measured profile goes (stderr by default).
    """

    repo: str
    base: str
    head: str
    backend: str = "auto"
    samples: int = 10
    python: str = sys.executable
    workdir: str | None = None
    run_cmd: CommandRunner = _run_cmd
    progress: Callable[[str], None] = _progress
    _trees: dict[str, str] = field(default_factory=dict)

    def _tree(self, side: str) -> str:
        if side not in self._trees:
            root = self.workdir or tempfile.mkdtemp(prefix="neuronasv-confirm-")
            self.workdir = root
            path = os.path.join(root, side)
            commit = self.base if side == "base" else self.head
            if not os.path.isdir(path):
                rc = self.run_cmd(
                    ["git", "-C", self.repo, "worktree", "add", "--detach", path, commit],
                    self.repo,
                    os.environ,
                )
                if rc != 0:
                    raise StoreError(f"git worktree add {commit[:12]} failed (exit {rc})")
            self._trees[side] = path
        return self._trees[side]

    def __call__(
        self, side: str, series: Sequence[SeriesId], round_index: int
    ) -> Mapping[SeriesId, Sequence[float]]:
        tree = self._tree(side)
        out: dict[SeriesId, list[float]] = {}
        # One process per workload and side per round, profiling every (shape, dtype) of
        # that workload's suspects: process start-up (torch import) is paid once, not once
        # per configuration.
        wanted: dict[str, tuple[list[str], list[str]]] = {}
        for s in series:
            if not s.workload:
                continue
            shapes, dtypes = wanted.setdefault(s.workload, ([], []))
            if s.shape and s.shape not in shapes:
                shapes.append(s.shape)
            if s.dtype and s.dtype not in dtypes:
                dtypes.append(s.dtype)
        commit = self.base if side == "base" else self.head
        for wl in sorted(wanted):
            shapes, dtypes = wanted[wl]
            target = os.path.join(self.workdir or tree, f"{side}-{round_index}-{wl}.json")
            self.progress(
                f"  round {round_index + 1} {side:<4} {commit[:8]}  {wl}"
                f" [{', '.join(shapes) or 'default shape'}] x [{', '.join(dtypes) or 'default'}]"
            )
            cmd = [
                self.python,
                "-m",
                "neuronasv",
                "profile",
                "--quiet",
                "--no-roofline",
                "--backend",
                self.backend,
                "--workload",
                wl,
                "--samples",
                str(self.samples),
                "--json",
                target,
            ]
            for shape in shapes:
                cmd += ["--shape", shape]
            for dtype in dtypes:
                cmd += ["--dtype", dtype]
            env = {**os.environ, "PYTHONPATH": tree}
            rc = self.run_cmd(cmd, tree, env)
            if rc != 0 or not os.path.exists(target):
                raise CaptureError(f"re-measuring {wl} at {side} failed (exit {rc})")
            with open(target, encoding="utf-8") as fh:
                doc = ProfileDocument.loads(fh.read(), source=target)
            out.update(samples_from_profile(doc, series))
        return out

    def close(self) -> None:
        """Remove the worktrees (best effort)."""
        for path in self._trees.values():
            self.run_cmd(
                ["git", "-C", self.repo, "worktree", "remove", "--force", path],
                self.repo,
                os.environ,
            )
        self._trees.clear()
