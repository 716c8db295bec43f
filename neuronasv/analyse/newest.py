"""The newest commit against its parent, and ``neuronasv regressions``' document (pure).

Change points need several commits on each side of a shift, so they can never judge the
newest commit: a shift there has one point after it. Until a shift is old enough for the
change-point detector, its only evidence is the comparison of the newest commit with its
parent — the same :func:`neuronasv.analyse.pairwise.compare` a PR comment is made of
(and, after ``neuronasv confirm``, that comment's own document). So:

* :func:`check_newest` compares the newest measured commit of a machine with its parent
  (or takes a compare/confirm document for exactly that pair, with its confirmations);
* :func:`regressions_document` puts that comparison into the history document of
  ``neuronasv regressions`` (``base`` = parent, ``head`` = newest, ``findings``), next to
  the change points and a :class:`~neuronasv.analyse.states.Coverage` that says whether
  the detector could run at all ("too few commits for change points (have 2, need 4)");
* :func:`neuronasv.analyse.states.series_state` turns a series' change points and its
  newest finding into the one state the site and the regressions table show.

The comparison's row states (``Finding.state``, decided in analyse) are what the views
read, so how ``compare`` reaches its verdicts can change freely.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from neuronasv.analyse.acks import Acknowledgement
from neuronasv.analyse.changepoints import CPSettings, detect_history
from neuronasv.analyse.pairwise import Settings, compare
from neuronasv.analyse.states import Coverage
from neuronasv.errors import IncomparableError, StoreError, UsageError
from neuronasv.model import FindingsDocument, History

if TYPE_CHECKING:
    from neuronasv.store.git import Git

__all__ = [
    "NewestCheck",
    "check_newest",
    "measured_commits",
    "newest_for",
    "newest_pair",
    "regressions_document",
]


def measured_commits(history: History, machine: str) -> list[str]:
    """Commits with at least one value on ``machine``, in the history's commit order."""
    have: set[str] = set()
    for s in history.series:
        if s.machine == machine:
            have.update(p.commit for p in s.points if p.value is not None)
    return [c for c in history.commits if c in have]


def newest_pair(
    history: History, machine: str, ancestors: Sequence[str] | None = None
) -> tuple[str, str] | None:
    """``(parent, newest)`` on ``machine``; None with fewer than two measured commits.

    ``newest`` is the last measured commit in the history's order. ``parent`` is the first
    of ``ancestors`` (newest's first-parent chain from git, nearest first) that was
    measured there; without ``ancestors``, or when none of them was measured, the
    measured commit just before ``newest`` in the history's order.
    """
    commits = measured_commits(history, machine)
    if len(commits) < 2:
        return None
    newest = commits[-1]
    measured = set(commits[:-1])
    for c in ancestors or ():
        if c != newest and c in measured:
            return c, newest
    return commits[-2], newest


@dataclass(frozen=True)
class NewestCheck:
    """The newest commit against its parent on one machine.

    Attributes:
        doc: the compare document (mode ``compare``; base = parent, head = newest); None
            when the two could not be compared (``note`` says why).
        source: ``compare`` (computed here: not re-measured) or ``report`` (the given
            compare/confirm document for this pair, confirmations included).
        note: why there is no comparison ("" when there is one).
    """

    doc: FindingsDocument | None
    source: str
    note: str = ""

    @property
    def confirmed_run(self) -> bool:
        """True when the findings went through ``neuronasv confirm`` (its settings say so;
        a comparison computed here never did, whatever its work-decided rows carry)."""
        return (
            self.source == "report"
            and self.doc is not None
            and "confirm" in self.doc.settings
            and any(f.remeasured for f in self.doc.findings)
        )


def check_newest(
    history: History,
    machine: str,
    *,
    ancestors: Sequence[str] | None = None,
    report: FindingsDocument | None = None,
    settings: Settings | None = None,
    acks: Iterable[Acknowledgement] = (),
    created: str = "",
) -> NewestCheck | None:
    """Compare the newest commit on ``machine`` with its parent (None: fewer than 2 commits).

    Args:
        history: the loaded history.
        machine: asv machine name.
        ancestors: the newest commit's first-parent chain (see :func:`newest_pair`).
        report: a compare document (``neuronasv compare``/``confirm`` output, what the PR
            comment renders) for exactly this parent and newest commit on this machine: its
            findings are used as they are, confirmations included.
        settings, acks, created: as for :func:`neuronasv.analyse.pairwise.compare`.

    Raises:
        UsageError: ``report`` is not a compare document of this parent/newest pair.
    """
    pair = newest_pair(history, machine, ancestors)
    if pair is None:
        return None
    parent, newest = pair
    if report is not None:
        if report.mode != "compare" or report.base is None or report.head is None:
            raise UsageError("--report: not a compare document (neuronasv compare/confirm)")
        got = (report.base.commit, report.head.commit, report.head.machine)
        if got != (parent, newest, machine):
            raise UsageError(
                f"--report compares {got[0][:12]}..{got[1][:12]} on {got[2]!r}, but the newest"
                f" commit on {machine!r} is {newest[:12]} (parent {parent[:12]})",
                hint="pass the compare/confirm document of the newest commit, or leave out"
                " --report to compare it here",
            )
        return NewestCheck(report, "report")
    try:
        doc = compare(
            history,
            parent,
            newest,
            machine=machine,
            settings=settings or Settings(),
            acks=acks,
            created=created,
        )
    except IncomparableError as exc:  # e.g. the backend changed at the newest commit
        return NewestCheck(None, "compare", f"not compared with its parent {parent[:12]}: {exc}")
    return NewestCheck(doc, "compare")


def _first_parents(git: Git | None, commit: str) -> list[str] | None:
    """``commit``'s first-parent chain, nearest first (None without git or unknown commit)."""

    if git is None:
        return None
    try:
        return git.ancestors(commit, 10000)[1:]
    except StoreError:
        return None


def newest_for(
    history: History,
    machine: str,
    git: Git | None,
    *,
    report: FindingsDocument | None = None,
    acks: Sequence[Acknowledgement] = (),
    created: str = "",
) -> NewestCheck | None:
    """:func:`check_newest` with the parent from git's first-parent chain when there is git
    (``git``: ``neuronasv.store.git.git_for``; None: the history's order).

    What ``neuronasv regressions`` and ``neuronasv publish --detect`` both do per machine.
    """
    measured = measured_commits(history, machine)
    ancestors = _first_parents(git, measured[-1]) if measured else None
    return check_newest(
        history, machine, ancestors=ancestors, report=report, acks=acks, created=created
    )


def regressions_document(
    history: History,
    *,
    machine: str | None = None,
    settings: CPSettings | None = None,
    acks: Iterable[Acknowledgement] = (),
    created: str = "",
    newest: NewestCheck | None = None,
) -> FindingsDocument:
    """``neuronasv regressions``' document: change points, coverage, and the newest check.

    Change points come from :func:`changepoints.detect_history`. ``settings["coverage"]``
    lists a :class:`Coverage` per machine. With ``newest``, the document's ``base``/``head``
    are the parent/newest commits, its ``findings`` the comparison's, and
    ``settings["newest"]`` says where they came from (else it says why there are none).
    """
    ack_list = list(acks)
    doc = detect_history(
        history,
        machine=machine,
        settings=settings or CPSettings(),
        acks=ack_list,
        created=created,
    )
    machines = [machine] if machine is not None else list(history.machines)
    coverage = [Coverage(m, len(measured_commits(history, m))) for m in machines]
    extra: dict[str, Any] = {"coverage": [c.to_json() for c in coverage]}
    if newest is None or newest.doc is None:
        if newest is not None:
            why = newest.note
        elif len(machines) > 1:
            why = f"{len(machines)} machines: pass --machine to compare the newest commit"
        else:
            why = "fewer than two commits: nothing to compare the newest commit with"
        extra["newest"] = {"checked": False, "note": why}
        return replace(doc, settings={**doc.settings, **extra})
    nd = newest.doc
    assert nd.base is not None and nd.head is not None
    extra["newest"] = {
        "checked": True,
        "machine": nd.head.machine,
        "parent": nd.base.commit,
        "commit": nd.head.commit,
        "source": newest.source,
        "confirmed_run": newest.confirmed_run,
        "settings": dict(nd.settings),
    }
    return replace(
        doc,
        base=nd.base,
        head=nd.head,
        findings=nd.findings,
        env_changes=nd.env_changes,
        settings={**doc.settings, **extra},
    )
