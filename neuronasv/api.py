"""The package without argv: the steps the commands run, for scripts, notebooks and the demo.

Each function is the step its command calls (:mod:`neuronasv.steps`), given its options as
one typed dataclass with the command's defaults, and returns a value::

    from neuronasv import api

    api.run(api.RunOptions(repo=".", commits=("main", "HEAD")))
    doc = api.compare(api.CompareOptions(base="main", head="HEAD"))   # a FindingsDocument
    confirmed = api.confirm(api.ConfirmOptions(findings=doc)).doc
    history = api.regressions(api.RegressionsOptions(report=confirmed))
    api.publish(api.PublishOptions(out="site", findings=(history,)))

:class:`Results` is a results folder read once, compared and published (the history is
read once per :class:`Results`; ``reload()`` reads it again). Errors are the package's
(:mod:`neuronasv.errors`), each with its exit code; results are returned, never printed
(a step's progress goes to the terminal as its command's does).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from neuronasv.run.asvrun import RunOptions
from neuronasv.run.bisect import BisectOptions
from neuronasv.steps.comment import Commented, CommentOptions
from neuronasv.steps.comment import comment as _comment
from neuronasv.steps.compare import CompareOptions
from neuronasv.steps.compare import compare as _compare
from neuronasv.steps.confirm import Confirmed, ConfirmOptions
from neuronasv.steps.confirm import confirm as _confirm
from neuronasv.steps.measure import Bisected, RunSummary
from neuronasv.steps.measure import bisect as _bisect
from neuronasv.steps.measure import run as _run
from neuronasv.steps.publish import Published, PublishOptions
from neuronasv.steps.publish import publish as _publish
from neuronasv.steps.regressions import RegressionsOptions
from neuronasv.steps.regressions import regressions as _regressions

if TYPE_CHECKING:
    from neuronasv.analyse.acks import Acknowledgement
    from neuronasv.analyse.changepoints import CPSettings
    from neuronasv.analyse.pairwise import Settings
    from neuronasv.model import FindingsDocument, History
    from neuronasv.publish import PublishOptions as SiteOptions
    from neuronasv.publish import PublishReport
    from neuronasv.store.git import Git

__all__ = [
    "BisectOptions",
    "Bisected",
    "CommentOptions",
    "Commented",
    "CompareOptions",
    "ConfirmOptions",
    "Confirmed",
    "PublishOptions",
    "Published",
    "RegressionsOptions",
    "Results",
    "RunOptions",
    "RunSummary",
    "bisect",
    "comment",
    "compare",
    "confirm",
    "publish",
    "regressions",
    "run",
]


def run(opts: RunOptions) -> RunSummary:
    """``neuronasv run``: the asv suite at each commit (samples, sidecars, traces)."""
    return _run(opts)


def compare(opts: CompareOptions) -> FindingsDocument:
    """``neuronasv compare``: base vs head, every series judged."""
    return _compare(opts)


def confirm(opts: ConfirmOptions) -> Confirmed:
    """``neuronasv confirm``: the suspects re-measured in ABAB rounds."""
    return _confirm(opts)


def comment(opts: CommentOptions) -> Commented:
    """``neuronasv comment``: the sticky PR comment, sent or (dry) planned."""
    return _comment(opts)


def regressions(opts: RegressionsOptions) -> FindingsDocument:
    """``neuronasv regressions``: change points and the newest commit vs its parent."""
    return _regressions(opts)


def publish(opts: PublishOptions) -> Published:
    """``neuronasv publish``: the static history site."""
    return _publish(opts)


def bisect(opts: BisectOptions, *, github: bool = True, record: bool = True) -> Bisected:
    """``neuronasv bisect``: the first commit at which a series changed."""
    return _bisect(opts, github=github, record=record)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Results:
    """An asv results folder (with neuronasv's sidecars) and, optionally, its git checkout.

    Args:
        results_dir: the results folder (``neuronasv run``'s ``--results-dir``).
        repo: the git checkout: commit order and ref names (``main``, ``HEAD``); None:
            the results' own dates and full or unique-prefix hashes only.
        machine: read only this machine's results.
    """

    def __init__(
        self,
        results_dir: str | os.PathLike[str],
        *,
        repo: str | os.PathLike[str] | None = None,
        machine: str | None = None,
    ) -> None:
        self.results_dir = os.fspath(results_dir)
        self.repo = None if repo is None else os.fspath(repo)
        self.machine = machine
        self._history: History | None = None

    @property
    def git(self) -> Git | None:
        from neuronasv.store.git import git_for

        return git_for(self.repo)

    @property
    def history(self) -> History:
        """The loaded history (read on first use)."""
        if self._history is None:
            from neuronasv.store.history import load_history

            self._history = load_history(self.results_dir, machine=self.machine, git=self.git)
        return self._history

    def reload(self) -> Results:
        """Read the folder again on next use (after a new run); returns ``self``."""
        self._history = None
        return self

    def commit(self, ref: str) -> str:
        """A ref (branch, tag, full or unique-prefix hash) -> the full hash that has results."""
        from neuronasv.store.history import resolve_commit

        return resolve_commit(ref, self.history, self.git)

    def compare(
        self,
        base: str,
        head: str,
        *,
        settings: Settings | None = None,
        acks: Iterable[Acknowledgement] = (),
        force: bool = False,
    ) -> FindingsDocument:
        """Base vs head, as ``neuronasv compare BASE HEAD`` decides it."""
        from neuronasv.analyse.pairwise import Settings, compare

        return compare(
            self.history,
            self.commit(base),
            self.commit(head),
            machine=self.machine,
            settings=settings or Settings(),
            acks=acks,
            force=force,
            base_label=base,
            head_label=head,
            created=_now(),
        )

    def regressions(
        self,
        *,
        settings: CPSettings | None = None,
        acks: Sequence[Acknowledgement] = (),
        report: FindingsDocument | None = None,
    ) -> FindingsDocument:
        """Change points over the history and the newest commit against its parent, as
        ``neuronasv regressions`` computes them (``report``: its ``--report``)."""
        from neuronasv.analyse.changepoints import CPSettings

        cp = settings or CPSettings()
        return _regressions(
            RegressionsOptions(
                results_dir=self.results_dir, repo=self.repo, machine=self.machine,
                window=cp.window, max_pvalue=cp.max_pvalue, min_magnitude=cp.min_magnitude,
                acks=acks, report=report,
            )
        )  # fmt: skip

    def publish(
        self,
        out: str | os.PathLike[str],
        *,
        findings: Sequence[FindingsDocument] | None = None,
        options: SiteOptions | None = None,
    ) -> PublishReport:
        """Write the history site into ``out`` (``findings``: states; None: none)."""
        from neuronasv.publish import PublishOptions as SiteOptions
        from neuronasv.publish import publish_site, scan_results

        data = scan_results(self.results_dir, machine=self.machine, repo=self.repo, workers=1)
        return publish_site(data, out, findings=findings, options=options or SiteOptions())
