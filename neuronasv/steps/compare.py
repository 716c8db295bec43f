"""``compare``: verdicts for every series between two commits (``neuronasv compare``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from neuronasv.errors import RegressionFound, UsageError, VerdictsWithheld
from neuronasv.steps.common import Acks, acks_of, floors_of, now, results_folder, warn_load_errors

if TYPE_CHECKING:
    from neuronasv.analyse.profile_samples import Rounds
    from neuronasv.analyse.rules import Rule
    from neuronasv.model import FindingsDocument, History
    from neuronasv.store.git import Git

__all__ = ["CompareOptions", "check_gate", "compare", "read_rounds"]


@dataclass(frozen=True)
class CompareOptions:
    """What ``neuronasv compare`` compares (each field is the flag of the same name).

    Attributes:
        base, head: commit-ish (branch, tag, hash or unique prefix).
        results_dir: asv results folder (None: the repository config's).
        repo: the git checkout (commit order, ref names); None: the results alone.
        machine, head_machine: asv machine names (head on another one needs ``force``).
        rules: minimum effects, ``[PATTERN=]RULE`` each.
        alpha: family-wise significance level.
        fail_on_time, fail_on_work: the gate's axes (:data:`TIME_GATES`, :data:`WORK_GATES`).
        acks: acknowledgements (a file; None: the checkout's).
        force: compare across machines or devices.
        history_dir, no_floor: noise floors from a stored history, or none at all.
        round_base, round_head: profile JSON files of paired rounds.
    """

    base: str
    head: str
    results_dir: str | None = None
    repo: str | None = "."
    machine: str | None = None
    head_machine: str | None = None
    rules: Sequence[str] = ()
    alpha: float = 0.01
    fail_on_time: str = "confirmed"
    fail_on_work: str = "undecided"
    acks: Acks = None
    force: bool = False
    history_dir: str | None = None
    no_floor: bool = False
    round_base: Sequence[str] = ()
    round_head: Sequence[str] = ()


def read_rounds(base_files: Sequence[str], head_files: Sequence[str]) -> Rounds:
    """The ``--round-base``/``--round-head`` documents, paired in order."""
    from neuronasv.analyse.profile_samples import paired_rounds
    from neuronasv.report.load import load_profile

    if len(base_files) != len(head_files):
        raise UsageError(
            f"--round-base given {len(base_files)} times but --round-head {len(head_files)}:"
            " rounds pair in order"
        )
    return paired_rounds(
        [load_profile(f) for f in base_files], [load_profile(f) for f in head_files]
    )


def _only_machine(history: History) -> str:
    machines = history.machines
    if len(machines) != 1:
        raise UsageError("--history-dir needs --machine when the results hold several machines")
    return str(machines[0])


def _resolve(ref: str, history: History, git: Git | None, rdir: str) -> str:
    from neuronasv.store.history import missing_results_error, resolve_commit

    try:
        commit = resolve_commit(ref, history, git)
    except UsageError:
        err = missing_results_error(history, rdir, ref)
        if err is not None:
            raise err from None
        raise
    err = missing_results_error(history, rdir, ref, commit)
    if err is not None:
        raise err
    return commit


def compare(opts: CompareOptions) -> FindingsDocument:
    """Base vs head, every series judged (the findings document ``--format json`` writes)."""
    from neuronasv.analyse.pairwise import Settings
    from neuronasv.analyse.pairwise import compare as compare_histories
    from neuronasv.analyse.rules import RuleSet
    from neuronasv.analyse.states import Gate
    from neuronasv.store.git import git_for
    from neuronasv.store.history import load_history

    rules = RuleSet.parse(list(opts.rules))
    git = git_for(opts.repo)
    rdir = results_folder(opts.results_dir, opts.repo)
    history = load_history(rdir, machine=None, git=git)
    warn_load_errors(history.load_errors)
    base = _resolve(opts.base, history, git, rdir)
    head = _resolve(opts.head, history, git, rdir)
    acks = acks_of(opts.acks, opts.repo)
    rounds = read_rounds(opts.round_base, opts.round_head) if opts.round_base else None
    floors = None
    if opts.no_floor or opts.history_dir:
        floors = floors_of(opts.history_dir, opts.no_floor,
                           opts.machine or _only_machine(history), (head,))  # fmt: skip
    return compare_histories(
        history,
        base,
        head,
        machine=opts.machine,
        head_machine=opts.head_machine,
        settings=Settings(
            rules=rules, alpha=opts.alpha, gate=Gate(opts.fail_on_time, opts.fail_on_work)
        ),
        acks=acks,
        force=opts.force,
        base_label=opts.base,
        head_label=opts.head,
        created=now(),
        floors=floors,
        rounds=rounds,
    )


def check_gate(doc: FindingsDocument, fail_rule: Rule | None) -> None:
    """``--fail-on``: :class:`VerdictsWithheld` (exit 10) when the device ran unusually,
    :class:`RegressionFound` (exit 1) when an unacknowledged row fires the gate."""
    from neuronasv.analyse.rules import failing
    from neuronasv.report.rowwords import gate_phrase

    if fail_rule is None:
        return
    if doc.withheld is not None:
        raise VerdictsWithheld(
            doc.withheld,
            hint="the device ran slower than usual: re-run base and head on a healthy device"
            " (neuronasv confirm); the verdicts are in the output as data",
        )
    bad = failing(doc, fail_rule)
    if bad:
        raise RegressionFound(
            f"{len(bad)} row(s) fire the {gate_phrase(doc.findings)} (beyond"
            f" --fail-on {fail_rule.text}): "
            + ", ".join(bad[:5])
            + (" ..." if len(bad) > 5 else "")
        )
