"""A small facade for notebooks, scripts and benches: a results folder, compared and published.

The same library functions the commands call, with keyword arguments and no argv::

    from neuronasv.api import Results

    results = Results(".asv/results", repo=".")
    doc = results.compare("main", "HEAD")          # a FindingsDocument (PR mode)
    history_doc = results.regressions()            # change points + newest vs its parent
    report = results.publish("site", findings=[history_doc])

Errors are the package's (:mod:`neuronasv.errors`), each with its exit code; nothing here
prints. The history is read once per :class:`Results` (``reload()`` reads it again).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neuronasv.analyse.acks import Acknowledgement
    from neuronasv.analyse.changepoints import CPSettings
    from neuronasv.analyse.pairwise import Settings
    from neuronasv.model import FindingsDocument, History
    from neuronasv.publish import PublishOptions, PublishReport
    from neuronasv.store.git import Git

__all__ = ["Results"]


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
        from neuronasv.analyse.newest import newest_for, regressions_document

        history, created = self.history, _now()
        machines = [self.machine] if self.machine else list(history.machines)
        newest = (
            newest_for(history, machines[0], self.git, report=report, acks=acks, created=created)
            if len(machines) == 1
            else None
        )
        return regressions_document(
            history,
            machine=self.machine,
            settings=settings,
            acks=acks,
            created=created,
            newest=newest,
        )

    def publish(
        self,
        out: str | os.PathLike[str],
        *,
        findings: Sequence[FindingsDocument] | None = None,
        options: PublishOptions | None = None,
    ) -> PublishReport:
        """Write the history site into ``out`` (``findings``: states; None: none)."""
        from neuronasv.publish import PublishOptions, publish_site, scan_results

        data = scan_results(self.results_dir, machine=self.machine, repo=self.repo, workers=1)
        return publish_site(data, out, findings=findings, options=options or PublishOptions())
