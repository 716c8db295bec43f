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

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from neuronasv.analyse.acks import Acknowledgement
from neuronasv.analyse.changepoints import CPSettings, detect_history
from neuronasv.analyse.floors import FLOOR_WINDOW, FloorKey, NoiseFloor, floors_of
from neuronasv.analyse.pairwise import Settings, compare
from neuronasv.analyse.states import Coverage
from neuronasv.errors import IncomparableError, StoreError, UsageError
from neuronasv.model import FindingsDocument, History

if TYPE_CHECKING:
    from neuronasv.store.columns import Columns, MachineColumns
    from neuronasv.store.git import Git

__all__ = [
    "NEWEST_CONTEXT",
    "NewestCheck",
    "check_newest",
    "column_floors",
    "measured_commits",
    "measured_in",
    "newest_for",
    "newest_for_columns",
    "newest_pair",
    "pair_of",
    "regressions_document",
    "with_newest",
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
    return pair_of(measured_commits(history, machine), ancestors)


def pair_of(commits: Sequence[str], ancestors: Sequence[str] | None) -> tuple[str, str] | None:
    """:func:`newest_pair` from a machine's measured commits in history order."""
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
    floors: Mapping[FloorKey, NoiseFloor] | None = None,
) -> NewestCheck | None:
    """Compare the newest commit on ``machine`` with its parent (None: fewer than 2 commits).

    Args:
        history: the loaded history.
        machine: asv machine name.
        ancestors: the newest commit's first-parent chain (see :func:`newest_pair`).
        report: a compare document (``neuronasv compare``/``confirm`` output, what the PR
            comment renders) for exactly this parent and newest commit on this machine: its
            findings are used as they are, confirmations included.
        settings, acks, created, floors: as for :func:`neuronasv.analyse.pairwise.compare`
            (``floors``: default, learned from ``history``).

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
            floors=floors,
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
    doc = detect_history(
        history,
        machine=machine,
        settings=settings or CPSettings(),
        acks=list(acks),
        created=created,
    )
    machines = [machine] if machine is not None else list(history.machines)
    measured = {m: len(measured_commits(history, m)) for m in machines}
    return with_newest(doc, measured, newest)


def with_newest(
    doc: FindingsDocument, measured: Mapping[str, int], newest: NewestCheck | None
) -> FindingsDocument:
    """A history document with its coverage (``measured``: machine -> measured commits,
    in the order shown) and the newest check (see :func:`regressions_document`)."""
    machines = list(measured)
    coverage = [Coverage(m, n) for m, n in measured.items()]
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
        runner=nd.runner,
    )


# -- long histories: the columnar view (neuronasv.store.columns) -------------------------

#: The newest check on a columnar history: the comparison reads the newest commit and its
#: parent, the noise floors come from the whole history's values, and device health judges
#: the canary against the sidecars of the machine's last this-many commits that have one
#: (as the floors, the device as it is now; reading every sidecar of a long history is the
#: cost this path avoids). A shorter history: every sidecar, as ``newest_for`` reads them.
NEWEST_CONTEXT = 100


def measured_in(mc: MachineColumns) -> list[str]:
    """:func:`measured_commits` of one machine's matrices."""
    cols = np.flatnonzero(mc.measured.any(axis=0)).tolist()
    return [mc.commits[j] for j in cols]


def column_floors(mc: MachineColumns, exclude: Collection[str]) -> dict[FloorKey, NoiseFloor]:
    """:func:`neuronasv.analyse.floors.noise_floors` of one machine's matrices."""
    keep = ~np.isin(np.array(mc.commits, dtype=object), list(exclude))
    rows = []
    for i, s in enumerate(mc.series):
        vals = mc.values[i, mc.measured[i] & keep]
        rows.append((s.series, vals[vals > 0.0][-FLOOR_WINDOW:].tolist()))  # what floors use
    return floors_of(rows)


def newest_for_columns(
    columns: Columns,
    machine: str,
    git: Git | None,
    load: Callable[[Collection[str], Mapping[str, str]], History],
    *,
    report: FindingsDocument | None = None,
    acks: Sequence[Acknowledgement] = (),
    created: str = "",
    context: int = NEWEST_CONTEXT,
) -> NewestCheck | None:
    """:func:`newest_for` on a columnar history: the pair from the matrices, the comparison
    on ``load(pair, sidecars)`` (a ``History`` with the points of the two commits and the
    profiles of ``sidecars``: commit -> results file, the last ``context`` commits of
    ``MachineColumns.sidecars``), with the noise floors of the whole history."""
    mc = columns.machine(machine)
    if mc is None:
        return None
    measured = measured_in(mc)
    ancestors = _first_parents(git, measured[-1]) if measured else None
    pair = pair_of(measured, ancestors)
    if pair is None:
        return None
    history = load(pair, dict(list(mc.sidecars.items())[-context:]))
    floors = column_floors(mc, exclude=(pair[1],))
    return check_newest(
        history, machine, ancestors=ancestors, report=report, acks=acks, created=created,
        floors=floors,
    )  # fmt: skip
