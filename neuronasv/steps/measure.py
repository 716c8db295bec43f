"""``run`` (the asv suite per commit) and ``bisect`` (the first commit at which a series
changed): the steps that measure.

asv and every measurement run in processes of their own (asv's, the profiler's, valgrind's
under ``run/``): isolation from the caller is the point of a measurement, so these steps
start them whoever calls; the step itself runs in the caller's process.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from neuronasv.errors import NothingToBisect, UsageError

if TYPE_CHECKING:
    from neuronasv.model.bisect import BisectDocument
    from neuronasv.run.asvrun import CommitRun, RunOptions
    from neuronasv.run.bisect import BisectOptions

__all__ = [
    "Bisected",
    "RunSummary",
    "bisect",
    "check_change",
    "parse_metrics",
    "run",
    "with_pull",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunSummary:
    """What ``run`` measured: one outcome per commit."""

    outcomes: tuple[CommitRun, ...]

    @property
    def failed(self) -> int:
        return sum(len(o.failures) for o in self.outcomes)

    def line(self) -> str:
        """The command's closing line."""
        failed = self.failed
        return f"{len(self.outcomes)} commit(s) benchmarked" + (
            f"; {failed} failed benchmark(s), see the lines above" if failed else ""
        )


def parse_metrics(text: str) -> tuple[str, ...]:
    """``--metrics``: ``devtime`` and any of the registry's other metrics
    (:mod:`neuronasv.metrics`), comma-separated (UsageError otherwise)."""
    from neuronasv.run.instrrun import parse_metrics as names_of

    try:
        names = names_of(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if "devtime" not in names:
        raise UsageError(f"devtime is always measured: give devtime,{','.join(names)}")
    return names


def _absolute(path: str | None) -> str | None:
    """A path option as the user meant it: relative to the folder the step runs in."""
    return os.path.abspath(path) if path else None


def run(opts: RunOptions) -> RunSummary:
    """Benchmark each commit of ``opts`` with asv (samples, sidecars, traces)."""
    from neuronasv.run.asvrun import canonical_python, run_commits

    opts = replace(
        opts,
        results_dir=_absolute(opts.results_dir),
        traces_dir=_absolute(opts.traces_dir),
        compile_cache=_absolute(opts.compile_cache),
        python=canonical_python(opts.python),
    )
    return RunSummary(tuple(run_commits(opts)))


@dataclass(frozen=True)
class Bisected:
    """A bisection's document and where its record went (None: ``record=False``)."""

    doc: BisectDocument
    record: str | None


def with_pull(doc: BisectDocument, skip: bool = False) -> BisectDocument:
    """The culprit's PR from the GitHub API when a token is there (else the subject's)."""
    commit = doc.result.commit
    if skip or not commit or not os.environ.get("GITHUB_TOKEN"):
        return doc
    if not os.environ.get("GITHUB_REPOSITORY"):
        return doc
    from neuronasv.github.client import GitHubClient
    from neuronasv.github.pulls import pull_for_commit

    pull = pull_for_commit(GitHubClient.from_env(), commit)
    if pull is None:
        return doc
    return replace(doc, result=replace(doc.result, pull=pull))


def bisect(opts: BisectOptions, *, github: bool = True, record: bool = True) -> Bisected:
    """Bisect ``opts``' range for its series (``neuronasv bisect``'s help tells how).

    ``github``: ask the API for the culprit's PR (with a token); ``record``: write the
    record beside the results (``regressions`` names the culprit from it).

    Raises:
        NothingToBisect: an exact axis saw no change in the range (exit 12), after the
            record is written.
    """
    from neuronasv.run.bisect import bisect_range
    from neuronasv.store.bisections import save_bisection

    if opts.max_rounds is not None and opts.max_rounds < opts.rounds:
        raise UsageError("--max-rounds must be at least --rounds")
    if opts.budget_seconds is not None and not opts.budget_seconds > 0:
        raise UsageError("--budget-minutes must be a positive number")
    opts = replace(
        opts,
        results_dir=_absolute(opts.results_dir),
        compile_cache=_absolute(opts.compile_cache),
    )
    doc = bisect_range(opts)
    doc = with_pull(doc, not github)
    path = None
    if record:
        from neuronasv.run.asvrun import RunOptions, run_dirs

        ro = RunOptions(repo=opts.repo, results_dir=opts.results_dir)
        path = save_bisection(run_dirs(opts.repo, ro)[0], doc)
        log.info(f"record: {path}")
    return Bisected(doc, path)


def check_change(doc: BisectDocument) -> None:
    """:class:`NothingToBisect` (exit 12) when an exact axis saw no change."""
    if doc.result.outcome == "no change":  # an exact axis: a fact (time says undecided)
        raise NothingToBisect(
            f"{doc.series.label}: no change between {doc.good[:12]} and {doc.bad[:12]}"
            f" ({doc.result.decided_by})"
        )
