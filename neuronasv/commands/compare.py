"""``neuronasv compare BASE HEAD``: verdicts for every series between two commits.

Exit codes: 0 done (regressions may be listed), 1 an unacknowledged regression matched
``--fail-on`` (and was not disproved by ``confirm``), 2 usage, 5 unreadable results,
6 base and head incomparable (different machine, backend or device model; ``--force``),
9 ``--fail-on`` given but the verdicts were withheld (the device's canary ran slower than
its machine's history; the output says why).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys

from neuronasv.analyse.acks import ACKS_PATH, load_acks
from neuronasv.analyse.pairwise import Settings, compare
from neuronasv.analyse.rules import Rule, RuleSet
from neuronasv.commands.args import (
    existing_dir,
    existing_file,
    machine_name,
    output_file,
    probability_open,
    write_output,
)
from neuronasv.errors import RegressionFound, ResultsError, UsageError, VerdictsWithheld
from neuronasv.model import FindingsDocument, History
from neuronasv.report.load import read_text
from neuronasv.report.tables import compare_markdown, compare_text
from neuronasv.store.git import Git, git_for
from neuronasv.store.history import (
    default_results_dir,
    load_history,
    missing_results_error,
    resolve_commit,
)

__all__ = ["add_parser", "failing", "run"]


def add_common(p: argparse.ArgumentParser, *, machine_help: str) -> None:
    p.add_argument("--results-dir", help="asv results folder (default: asv.conf.json's)")
    p.add_argument("--machine", type=machine_name, help=machine_help)
    p.add_argument(
        "--repo", type=existing_dir, default=".", help="git repository for names and order (.)"
    )


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare",
        help="base vs head verdicts with p-values, CIs and op attribution",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("base", metavar="BASE", help="commit-ish (branch, tag, hash or prefix)")
    p.add_argument("head", metavar="HEAD", help="commit-ish (branch, tag, hash or prefix)")
    add_common(p, machine_help="asv machine name (default: the one with both commits)")
    p.add_argument(
        "--head-machine",
        type=machine_name,
        help="head measured on another machine (needs --force)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "markdown"),
        default="text",
        help="text table, json (the findings document: comment/status/summary/confirm read"
        " it) or markdown",
    )
    p.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="[PATTERN=]RULE",
        help="minimum effect, e.g. 'median:5%%' or '*aten::add*=median:20%%' (repeatable)",
    )
    p.add_argument(
        "--alpha",
        type=probability_open,
        default=0.01,
        help="family-wise significance level, between 0 and 1 (0.01)",
    )
    p.add_argument(
        "--fail-on",
        metavar="RULE",
        help="exit 1 if an unacknowledged regression exceeds RULE (e.g. 'median:5%%')",
    )
    p.add_argument(
        "--acks", type=existing_file, help=f"acknowledgements file (default: REPO/{ACKS_PATH})"
    )
    p.add_argument("--force", action="store_true", help="compare across machines/devices")
    p.add_argument(
        "--out", type=output_file, help="write the output to this file instead of stdout"
    )
    add_floor_args(p)
    p.add_argument(
        "--round-base",
        action="append",
        type=existing_file,
        default=[],
        metavar="FILE",
        help="profile JSON (neuronasv profile --json) of one base round; repeat per round",
    )
    p.add_argument(
        "--round-head",
        action="append",
        type=existing_file,
        default=[],
        metavar="FILE",
        help="profile JSON of one head round, paired in order with --round-base",
    )
    p.set_defaults(func=run)


def add_floor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--history-dir",
        type=existing_dir,
        help="main-branch results folder for per-series noise floors (default: --results-dir)",
    )
    p.add_argument("--no-floor", action="store_true", help="no noise floors")


def floors_for(args: argparse.Namespace, machine: str, exclude: tuple[str, ...]) -> dict | None:
    """Noise floors from ``--history-dir`` (None: let compare learn them itself)."""
    if args.no_floor:
        return {}
    if not args.history_dir:
        return None
    from neuronasv.analyse.floors import noise_floors

    return noise_floors(load_history(args.history_dir, machine=machine), machine, exclude=exclude)


def read_rounds(base_files: list[str], head_files: list[str]) -> dict:
    """``floor_key -> (base rounds, head rounds)`` from paired profile documents."""
    from neuronasv.analyse.floors import floor_key
    from neuronasv.model import ProfileDocument, SeriesId
    from neuronasv.model.profile import module_series_name

    if len(base_files) != len(head_files):
        raise UsageError(
            f"--round-base given {len(base_files)} times but --round-head {len(head_files)}:"
            " rounds pair in order"
        )
    out: dict[tuple[object, ...], tuple[list[list[float]], list[list[float]]]] = {}
    for i, files in enumerate(zip(base_files, head_files, strict=True)):
        for side, path in enumerate(files):
            doc = ProfileDocument.loads(read_text(path, "profile document"), source=path)
            for w in doc.workloads:
                found = (
                    {None: w.device_time_us}
                    | {o.op: o.self_device_time_us for o in w.ops}
                    | {module_series_name(m.path): m.device_time_us for m in w.modules if m.path}
                )
                for op, xs in found.items():
                    key = floor_key(SeriesId("", (), w.name, w.shape, w.dtype, op))
                    got = out.setdefault(key, ([], []))[side]
                    if len(got) == i:  # absent in an earlier round: unusable
                        got.append([x * 1e-6 for x in xs])  # µs -> seconds
    return out


def failing(doc: FindingsDocument, rule: Rule) -> list[str]:
    """Labels of unacknowledged regressions beyond ``rule`` not disproved by confirm."""
    out = []
    for f in doc.findings:
        if f.verdict != "regression" or f.acknowledged is not None or f.confirmed is False:
            continue
        if f.base is not None and f.head is not None and rule.exceeded(f.base, f.head):
            out.append(f.series.label)
    return out


def render(doc: FindingsDocument, fmt: str) -> str:
    if fmt == "json":
        return doc.dumps()
    if fmt == "markdown":
        return compare_markdown(doc) if doc.mode == "compare" else doc.dumps()
    return compare_text(doc)


def emit(text: str, out: str | None) -> None:
    """The command's output to ``out`` (atomically) or stdout."""
    write_output(text, out)


def _only_machine(history: History) -> str:
    machines = history.machines
    if len(machines) != 1:
        raise UsageError("--history-dir needs --machine when the results hold several machines")
    return str(machines[0])


def results_folder(args: argparse.Namespace) -> str:
    """``--results-dir`` (or the config's), which must exist: exit 5 naming it otherwise."""
    rdir = str(args.results_dir or default_results_dir(args.repo))
    if not os.path.isdir(rdir):
        raise ResultsError(
            f"results folder {rdir} "
            + ("is not a folder" if os.path.exists(rdir) else "does not exist"),
            hint="measure first with `neuronasv run COMMIT`, or pass --results-dir",
        )
    return rdir


def warn_load_errors(history: History) -> None:
    """Results files that could not be read, on stderr (the rest were loaded)."""
    for err in history.load_errors[:10]:
        print(f"warning: skipped: {err}", file=sys.stderr)
    if len(history.load_errors) > 10:
        print(f"warning: ... and {len(history.load_errors) - 10} more", file=sys.stderr)


def _resolve(ref: str, history: History, git: Git | None, rdir: str) -> str:
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


def run(args: argparse.Namespace) -> int:
    fail_rule = Rule.parse(args.fail_on) if args.fail_on else None
    rules = RuleSet.parse(args.rule)
    git = git_for(args.repo)
    rdir = results_folder(args)
    history = load_history(rdir, machine=None, git=git)
    warn_load_errors(history)
    base = _resolve(args.base, history, git, rdir)
    head = _resolve(args.head, history, git, rdir)
    acks = load_acks(args.acks or os.path.join(args.repo, ACKS_PATH))
    rounds = read_rounds(args.round_base, args.round_head) if args.round_base else None
    floors = None
    if args.no_floor or args.history_dir:
        floors = floors_for(args, args.machine or _only_machine(history), (head,))
    doc = compare(
        history,
        base,
        head,
        machine=args.machine,
        head_machine=args.head_machine,
        settings=Settings(rules=rules, alpha=args.alpha),
        acks=acks,
        force=args.force,
        base_label=args.base,
        head_label=args.head,
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        floors=floors,
        rounds=rounds,
    )
    emit(render(doc, args.format), args.out)
    if fail_rule is not None and doc.withheld is not None:
        raise VerdictsWithheld(
            doc.withheld,
            hint="the device ran slower than usual: re-run base and head on a healthy device"
            " (neuronasv confirm); the verdicts are in the output as data",
        )
    if fail_rule is not None:
        bad = failing(doc, fail_rule)
        if bad:
            raise RegressionFound(
                f"{len(bad)} regression(s) beyond --fail-on {fail_rule.text}: "
                + ", ".join(bad[:5])
                + (" ..." if len(bad) > 5 else "")
            )
    return 0
