"""``confirm``: re-measure suspected regressions base/head interleaved (``neuronasv confirm``).

Each round profiles base and head in a process of its own (``python -m neuronasv profile
--json`` in a git worktree per side, :class:`~neuronasv.run.worktree.WorktreeProfileRunner`):
a fresh process per side and round is the measurement, not a front end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from neuronasv.errors import RegressionFound, UsageError
from neuronasv.steps.common import Report, floors_of, report_of

if TYPE_CHECKING:
    from neuronasv.analyse.rules import Rule
    from neuronasv.model import FindingsDocument
    from neuronasv.model.rounds import RoundsDocument

__all__ = ["ConfirmOptions", "Confirmed", "check_gate", "confirm", "default_sampling"]


@dataclass(frozen=True)
class ConfirmOptions:
    """What ``neuronasv confirm`` re-measures (each field is the flag of the same name).

    Attributes:
        findings: the compare document (a file, or the document).
        repo: the git checkout holding both commits.
        rounds: ABAB rounds before the first look.
        max_rounds: add rounds to undecided suspects up to this many (None: ``rounds``).
        budget_seconds: start no round that would end past this (None: no limit).
        samples, active: per side per round (None: :func:`default_sampling`'s).
        backend: where to re-measure.
        include_noisy: re-measure noisy findings too (``--regressions-only``: False).
        history_dir, no_floor: noise floors from a stored history, or none at all.
    """

    findings: Report
    repo: str = "."
    rounds: int = 3
    max_rounds: int | None = None
    budget_seconds: float | None = None
    samples: int | None = None
    active: int | None = None
    backend: str = "auto"
    include_noisy: bool = True
    history_dir: str | None = None
    no_floor: bool = False


@dataclass(frozen=True)
class Confirmed:
    """The document with ``confirmed`` set, and every re-measured sample (``--rounds-out``)."""

    doc: FindingsDocument
    rounds: RoundsDocument


def default_sampling(
    samples: int | None, active: int | None, doc: FindingsDocument
) -> tuple[int, int]:
    """``(samples, active)`` per side per round: the options, else single-iteration samples,
    10 on the CPU (or an unknown backend) and 30 on an accelerator.

    Single iterations, not the asv suite's 3-iteration means: a round's median varies
    between processes no more that way, so the suite history's floors (the rounds test's
    prior) are, if anything, the wider ones, which is conservative. Measured
    (``bench/bench_sampling.py --processes 16``, this CPU, quiet): median between-process
    SD of a series' median 17.7 % for 10 single iterations against 20.5 % for the suite's
    10 means of 3. On the H200 data 3-iteration means raised the adaptive confirmation's
    false alarms to 12 % (``bench/eval_h200.py --active 3``; single iterations: 0 %).
    More samples on an accelerator: there most of an op's round-to-round noise is the
    median's own sampling error (docs/analysis.md).
    """
    from neuronasv.measure.backends import default_samples

    backend = doc.head.fingerprint.get("backend") if doc.head else None
    return samples or default_samples(backend), active or 1


def confirm(opts: ConfirmOptions) -> Confirmed:
    """Re-measure the suspects in rounds and settle their time (see the module doc)."""
    from neuronasv.analyse.confirm import confirm as confirm_rounds
    from neuronasv.analyse.replay import RecordingRunner
    from neuronasv.run.worktree import WorktreeProfileRunner

    doc = report_of(opts.findings)
    source = opts.findings if isinstance(opts.findings, str) else "the findings"
    if doc.mode != "compare" or doc.base is None or doc.head is None:
        raise UsageError(f"{source}: not a compare document")
    if opts.max_rounds is not None and opts.max_rounds < opts.rounds:
        raise UsageError("--max-rounds must be at least --rounds")
    if opts.budget_seconds is not None and not opts.budget_seconds > 0:
        raise UsageError("--budget-seconds must be a positive number")
    samples, active = default_sampling(opts.samples, opts.active, doc)
    runner = WorktreeProfileRunner(
        repo=opts.repo,
        base=doc.base.commit,
        head=doc.head.commit,
        backend=opts.backend,
        samples=samples,
        active=active,
    )
    floors = (
        floors_of(opts.history_dir, opts.no_floor, doc.base.machine, (doc.head.commit,))
        if opts.history_dir
        else None
    )
    recorder = RecordingRunner(runner)
    try:
        doc = confirm_rounds(
            doc,
            recorder,
            rounds=opts.rounds,
            max_rounds=opts.max_rounds,
            budget_seconds=opts.budget_seconds,
            include_noisy=opts.include_noisy,
            floors=floors,
        )
    finally:
        runner.close()
    rec = recorder.document(runner.base, runner.head, opts.rounds, opts.max_rounds)
    return Confirmed(doc, rec)


def check_gate(doc: FindingsDocument, fail_rule: Rule | None) -> None:
    """``--fail-on``: :class:`RegressionFound` (exit 1) on a confirmed regression beyond it."""
    from neuronasv.analyse.rules import failing

    if fail_rule is None:
        return
    bad = failing(doc, fail_rule, confirmed_only=True)
    if bad:
        raise RegressionFound(f"{len(bad)} confirmed regression(s): " + ", ".join(bad[:5]))
