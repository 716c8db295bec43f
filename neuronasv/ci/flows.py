"""The workflow steps that chain several steps (``python -m neuronasv.ci STEP``).

Each step calls the package's step functions (:mod:`neuronasv.steps`: the very functions
the ``neuronasv`` commands call) in this process, in the repository at ``--repo`` (default:
the current folder), and writes its workflow outputs with
:func:`~neuronasv.ci.outputs.set_output`. What those steps print goes to stderr, as the
commands' output did when the steps ran them as child processes: stdout holds only the
``name=value`` output lines. A failure ends the step with the error's documented exit code
(:mod:`neuronasv.errors`), the code the command would have exited with.

No step here starts ``python -m neuronasv``. The processes that remain are those where
isolation is the point, and they are started by the steps whoever calls them: asv and the
profiled benchmarks (``neuronasv run``: a measurement must not share the caller's
interpreter, its imports or its allocator), valgrind's callgrind (its counts, ``neuronasv
run --metrics``), one process per side and round of ``confirm`` (rounds are independent
processes by design), and git. The privileged ``pr-comment`` step
(:mod:`neuronasv.ci.pr_comment`) reads the untrusted artifact in its own job, on another
runner, never in a process that ran PR code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from neuronasv import env
from neuronasv.ci import requirements as requirements_step
from neuronasv.ci.options import add_store_args, commit_url, repo_of, store_ref
from neuronasv.ci.outputs import set_output
from neuronasv.ci.owned import claim_dir, remove_owned
from neuronasv.errors import UsageError
from neuronasv.fileio import write_atomic
from neuronasv.log import emit
from neuronasv.steps.store import StoreRef, results_store
from neuronasv.store.git import Git

__all__ = [
    "PrMeasurement",
    "PullRequestRef",
    "SiteOptions",
    "StoreRef",
    "add_parsers",
    "analyse",
    "check_site_branch",
    "issues",
    "machine_for_shard",
    "parse_shards",
    "plan",
    "pr_bench",
    "regression_detected",
    "site_branch",
]

log = logging.getLogger(__name__)

_NAME = re.compile(r"[A-Za-z0-9._-]+")
_SHA = re.compile(r"[0-9a-f]{40}")


@contextlib.contextmanager
def _steps_on_stderr() -> Iterator[None]:
    """What the steps print goes to stderr (stdout carries only the workflow outputs)."""
    with contextlib.redirect_stdout(sys.stderr):
        yield
    sys.stderr.flush()


def machine_for_shard(base: str, shard: str) -> str:
    """``base`` for the single shard ``all``, else ``base-shard`` (disjoint result folders).

    Both become folder names (``<results>/<machine>/``, the artifact ``results-<shard>``):
    each is ``[A-Za-z0-9._-]+``, never ``.``/``..`` nor starting with ``.`` or ``-``, and the
    machine name passes :func:`~neuronasv.store.machine.check_machine_name`."""
    from neuronasv.store.machine import check_machine_name

    for what, value in (("machine name", base), ("shard name", shard)):
        if not _NAME.fullmatch(value) or value.startswith((".", "-")) or ".." in value:
            raise UsageError(f"{what} {value!r} must be [A-Za-z0-9._-]+, not starting with"
                             " '.' or '-', without '..'")  # fmt: skip
    return check_machine_name(base if shard == "all" else f"{base}-{shard}")


def parse_shards(text: str, machine: str) -> list[dict[str, str]]:
    """The shard list (JSON ``[{name, bench}]``), checked, each with its machine name."""
    try:
        shards = json.loads(text or '[{"name": "all", "bench": ""}]')
    except ValueError as exc:
        raise UsageError(f"the shard list is not JSON: {exc}") from None
    if not isinstance(shards, list) or not shards:
        raise UsageError("the shard list must be a non-empty JSON list")
    out: list[dict[str, str]] = []
    for s in shards:
        if not isinstance(s, dict):
            raise UsageError(f"each shard needs a name: {s!r}")
        name = str(s.get("name", ""))
        if any(o["name"] == name for o in out):
            raise UsageError(f"duplicate shard name {name!r}")
        out.append({"name": name, "bench": str(s.get("bench", "")),
                    "machine": machine_for_shard(machine, name)})  # fmt: skip
    return out


def plan(
    repo: str, commit: str, *, machine: str, shards_json: str, backfill: int, store: StoreRef
) -> None:
    """The pushed commit plus recent first-parent commits a shard has no result for."""
    if not 0 <= backfill <= 100:
        raise UsageError(f"backfill must be 0..100, got {backfill}")
    shards = parse_shards(shards_json, machine)
    git = Git(repo)
    head = git.rev_parse(commit)
    recent = git.ancestors(head, backfill + 1)
    want = {head}
    if backfill:
        branch = results_store(store)
        for shard in shards:
            want.update(branch.missing_commits(recent, shard["machine"]))
    ordered = [c for c in reversed(recent) if c in want]
    log.info(f"==> benchmarking {len(ordered)} commit(s) on {len(shards)} shard(s)")
    set_output("commits", " ".join(ordered))
    set_output("shards", json.dumps(shards, separators=(",", ":")))


def regression_detected(findings: str | os.PathLike[str]) -> bool:
    """Whether the findings document's commit status would be a failure (a regression)."""
    from neuronasv.github.statuses import status_payload
    from neuronasv.report.load import load_findings

    return bool(status_payload(load_findings(os.fspath(findings)))["state"] == "failure")


@dataclass(frozen=True)
class PullRequestRef:
    """The pull request a ``pr-bench`` measures.

    Attributes:
        number: the PR number (≥ 1).
        base, head: full commit hashes (the measurement compares head with their merge base).
    """

    number: int
    base: str
    head: str


@dataclass(frozen=True)
class PrMeasurement:
    """How a ``pr-bench`` measures.

    Attributes:
        machine: the machine name (resolved by :func:`machine_for_shard`).
        bench: a ``--bench`` regex, or empty for every benchmark.
        rounds: confirmation rounds (0: no confirmation).
        max_rounds: confirmation's round limit (None: ``rounds + 3``).
        budget_seconds, samples, history_dir: confirmation's options of those names (None:
            ``neuronasv confirm``'s defaults).
        metrics: ``neuronasv run --metrics`` (empty: its default).
    """

    machine: str
    bench: str
    rounds: int
    max_rounds: int | None = None
    budget_seconds: float | None = None
    samples: int | None = None
    history_dir: str | None = None
    metrics: str = ""


def _write(path: str, text: str) -> None:
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def pr_bench(
    repo: str, pr: PullRequestRef, how: PrMeasurement, *, out: str, traces_out: str | None
) -> None:
    """The unprivileged PR measurement (the artifact layout of docs/runners.md)."""
    from neuronasv.publish.traces import copied_line, pick_traces
    from neuronasv.report.document import render_document
    from neuronasv.run.asvrun import RunOptions
    from neuronasv.steps.comment import CommentOptions, render
    from neuronasv.steps.compare import CompareOptions, compare
    from neuronasv.steps.confirm import ConfirmOptions, confirm
    from neuronasv.steps.measure import parse_metrics, run

    base, head, rounds, bench = pr.base, pr.head, how.rounds, how.bench
    if pr.number < 1 or not (_SHA.fullmatch(base) and _SHA.fullmatch(head)):
        raise UsageError("--pr must be a PR number and --base/--head full commit hashes")
    machine = machine_for_shard(how.machine, "all")
    metrics = parse_metrics(how.metrics) if how.metrics else None  # empty: run's default
    outp = Path(out)
    results, traces_all = outp / "results", outp / "traces-all"
    traces = Path(traces_out) if traces_out else outp / "traces"
    outp.mkdir(parents=True, exist_ok=True)
    for p in (results, traces_all, traces):  # a user's folder is refused, never deleted
        claim_dir(str(p))
    mb = Git(repo).text("merge-base", base, head)
    findings = str(outp / "findings.json")
    with _steps_on_stderr():
        summary = run(RunOptions(
            repo=repo, commits=(mb, head), machine=machine, results_dir=str(results),
            traces_dir=str(traces_all), bench=bench or None, keep_traces=True, metrics=metrics,
            compile_cache=env.COMPILE_CACHE.read(),  # as `neuronasv run`'s default
        ))  # fmt: skip
        log.info(summary.line())
        doc = compare(CompareOptions(base=mb, head=head, results_dir=str(results),
                                     machine=machine, repo=repo))  # fmt: skip
        _write(findings, render_document(doc, "json"))
        if rounds:
            done = confirm(ConfirmOptions(
                findings=findings, repo=repo, rounds=rounds,
                max_rounds=how.max_rounds or rounds + 3, budget_seconds=how.budget_seconds,
                samples=how.samples, history_dir=how.history_dir,
            ))  # fmt: skip
            _write(str(outp / "rounds.json"), done.rounds.dumps())
            _write(findings, render_document(done.doc, "json"))
        log.info(copied_line(pick_traces(findings, str(traces_all), machine, str(traces)),
                             str(traces)))  # fmt: skip
        remove_owned(str(traces_all))
        body = render(CommentOptions(pr=pr.number, report=findings)).body
        _write(str(outp / "comment.md"), body)
    for name, value in (("pr-number", str(pr.number)), ("head-sha", head), ("base-sha", mb)):
        (outp / name).write_text(value + "\n", encoding="ascii")
    set_output("regression-detected", str(regression_detected(findings)).lower())


@dataclass(frozen=True)
class SiteOptions:
    """What the analyse step's site links to, and where it keeps its cache."""

    commit_url: str | None = None
    site_url: str | None = None
    title: str | None = None
    traces_dir: str | None = None
    cache_dir: str | None = None


def analyse(repo: str, *, out: str, site: str, store: StoreRef, opts: SiteOptions) -> None:
    """Pull the history, change points per machine, and the site.

    ``opts.cache_dir`` keeps what the next run can reuse (the workflow keeps it between
    runs with the Actions cache): per machine, ``neuronasv regressions``' parsed files,
    searched windows and culprit comparisons (``regressions/<machine>``: each run prunes
    what it did not use, so machines never share one), and the site's parsed summaries
    (``publish``). A stale or damaged cache costs time, never an answer. The regressions
    entries are signed with ``NEURONASV_CACHE_KEY``, else the key file beside DIR (not in
    what the workflow restores): on a fresh runner without the variable every restored
    entry is a miss.
    """
    from neuronasv.steps.publish import PublishOptions, publish
    from neuronasv.steps.regressions import (
        RegressionsOptions,
        machines_in,
        regressions_per_machine,
    )
    from neuronasv.steps.store import branch_of, pull, pull_lines
    from neuronasv.store.cachekey import key_path

    outp = Path(out)
    outp.mkdir(parents=True, exist_ok=True)
    history = outp / "history"
    claim_dir(str(history))  # deleted at the end: only a folder a step of ours made
    with _steps_on_stderr():
        line, kept = pull_lines(pull(store, str(history)), branch_of(store), str(history))
        log.info("\n".join([line, *kept]))
        machines = machines_in(str(history))
        if not machines:
            raise UsageError("no machine folders in the results branch")
        cache_dir = opts.cache_dir
        # One key for every machine's cache, beside the folder the workflow restores (never
        # in it: a restored entry must not bring the key that signs it; store/cachekey.py).
        key_file = key_path(cache_dir) if cache_dir else None
        ropts = RegressionsOptions(results_dir=str(history), repo=repo, cache_key_file=key_file)
        docs = {}
        for machine in machines:
            cache = os.path.join(cache_dir, "regressions", machine) if cache_dir else None
            docs.update(regressions_per_machine(replace(ropts, cache_dir=cache), [machine]))
        paths = []
        for machine, doc in docs.items():
            paths.append(str(outp / f"regressions-{machine}.json"))
            _write(paths[-1], doc.dumps())
        traces = opts.traces_dir
        done = publish(PublishOptions(
            out=site, results_dir=str(history), repo=repo, findings=tuple(paths),
            base_url=opts.site_url or "", commit_url=opts.commit_url, title=opts.title,
            no_cache=cache_dir is None,
            cache_dir=os.path.join(cache_dir, "publish") if cache_dir else None,
            cache_key_file=key_file,
            traces_dir=traces if traces and os.path.isdir(traces) else None,
        ))  # fmt: skip
        log.info(done.line())
    remove_owned(str(history))
    detected = any(regression_detected(d) for d in paths)
    set_output("regression-detected", str(detected).lower())


def issues(findings_dir: str, *, site_url: str | None, dry_run: bool) -> None:
    """``neuronasv issues-sync`` over every ``regressions-<machine>.json`` of the folder."""
    from neuronasv.steps.store import action_line, sync_issues

    folder = Path(findings_dir)
    docs = sorted(str(p) for p in (folder.iterdir() if folder.is_dir() else ())
                  if p.name.startswith("regressions-") and p.suffix == ".json")  # fmt: skip
    if not docs:
        raise UsageError(
            f"no regressions-<machine>.json in {findings_dir}",
            hint="download the `regressions` artifact of neuronasv-commit.yml",
        )
    with _steps_on_stderr():
        plan = sync_issues(docs, site_url=site_url, dry_run=dry_run)
        for a in plan:
            log.info(action_line(a, dry_run=dry_run))
        if not plan:
            log.info("regression issues up to date")
    set_output("synced", "false" if dry_run else "true")


def site_files(site: str) -> dict[str, Path]:
    """Every regular file under ``site`` by its path there (symbolic links not followed)."""
    root = Path(site)
    if not root.is_dir() or root.is_symlink():
        raise UsageError(f"--site {site} is not a folder")
    files: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink():
                files[path.relative_to(root).as_posix()] = path
    if "index.html" not in files:
        raise UsageError(f"{site} holds no index.html: not a site `neuronasv publish` built")
    return files


def _remote_default(repo: str, remote: str, token_env: str | None) -> str | None:
    """The remote's default branch: its recorded HEAD, else asked (``ls-remote --symref``)."""
    from neuronasv.ci.branches import remote_head
    from neuronasv.store.gitstore import token_git_env

    git = Git(repo)
    known = remote_head(git)
    if known is not None and known[0] == remote:
        return known[1]
    env = token_git_env(token_env) if token_env else {}
    res = git.run("ls-remote", "--symref", remote, "HEAD", env={**env, "GIT_TERMINAL_PROMPT": "0"},
                  check=False)  # fmt: skip
    m = re.search(r"^ref: refs/heads/(\S+)\tHEAD$", res.text, flags=re.M)
    return m.group(1) if res.returncode == 0 and m else None


def check_site_branch(
    branch: str, *, results_branch: str | None, default_branch: str = "", repo: str = ".",
    remote: str = "origin", token_env: str | None = None,
) -> None:  # fmt: skip
    """A UsageError unless ``branch`` (the site's; empty = none) is neither the results
    branch nor the default branch (``default_branch``, else the remote's, asked).

    Committing the site there would put ``index.html`` over the user's own files, or mix
    the site into the results history; the plan job checks it before any measurement.
    """
    if not branch:
        return
    from neuronasv.store.gitstore import DEFAULT_BRANCH

    if branch == (results_branch or DEFAULT_BRANCH):
        raise UsageError(f"the site branch {branch!r} is the results branch: choose another",
                         hint="site-branch: gh-pages")  # fmt: skip
    default = default_branch or _remote_default(repo, remote, token_env)
    if default is None:
        raise UsageError(
            f"cannot tell the repository's default branch, so the site branch {branch!r}"
            " cannot be checked against it",
            hint="pass --default-branch (the workflows pass github.event.repository"
            ".default_branch)",
        )
    if branch == default:
        raise UsageError(
            f"the site branch {branch!r} is the default branch: the site would be committed"
            " over your code",
            hint="site-branch: gh-pages (a branch of its own; Pages from a branch)",
        )


def site_branch(
    repo: str, *, site: str, remote: str, branch: str, token_env: str | None,
    results_branch: str | None = None, default_branch: str = "",
) -> None:  # fmt: skip
    """Put the site on ``branch`` (GitHub Pages from a branch): one commit on top of the
    branch, fetched, re-applied and retried as the results store does, never forced.

    Files of an earlier site that this one lacks stay on the branch (the store adds and
    replaces, it never deletes); ``.nojekyll`` keeps Pages from running Jekyll on it.
    """
    from neuronasv.store.gitstore import ResultsStore, token_git_env

    check_site_branch(branch, results_branch=results_branch, default_branch=default_branch,
                      repo=repo, remote=remote, token_env=token_env)  # fmt: skip
    files: dict[str, bytes | Path] = {**site_files(site), ".nojekyll": b""}
    env = token_git_env(token_env) if token_env else {}
    store = ResultsStore(repo, remote=remote, branch=branch, env=env)
    rep = store.write(files, f"neuronasv: the history site ({len(files)} files)")
    state = "published" if rep.changed else "already published (no change)"
    log.info(f"{state}: {len(files)} files on {branch} at {rep.commit[:12]}")
    set_output("site-commit", rep.commit)


# --- the steps' arguments (``python -m neuronasv.ci``'s parser is built from these) -------


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register this module's steps, each with its ``func``."""
    from neuronasv.ci.options import branch_name, existing_folder, positive_int, positive_seconds

    p = sub.add_parser("plan", help="the pushed commit and recent ones without results")
    p.add_argument("commit")
    p.add_argument("--machine", default="ci", help="asv machine name")
    p.add_argument("--shards", default="", help='JSON [{"name", "bench"}] (default: one)')
    p.add_argument("--backfill", type=int, default=5)
    p.add_argument("--site-branch", type=branch_name, default="",
                   help="refused when it is a branch of ours")  # fmt: skip
    p.add_argument("--default-branch", default="", help="the repository's default branch")
    add_store_args(p)
    p.set_defaults(func=_plan)
    p = sub.add_parser("pr-bench", help="the unprivileged PR measurement and its artifact")
    p.add_argument("--pr", type=int, required=True)
    p.add_argument("--base", required=True)
    p.add_argument("--head", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--machine", default="ci", help="asv machine name")
    p.add_argument("--bench", default="")
    p.add_argument("--traces-out", default=None)
    p.add_argument("--rounds", type=int, default=3, help="ABAB rounds (0: no confirmation)")
    p.add_argument("--metrics", default="",
                   help="passed to neuronasv run --metrics (empty: its default)")  # fmt: skip
    p.add_argument("--max-rounds", type=positive_int, default=None,
                   help="confirmation's limit (default: --rounds + 3)")  # fmt: skip
    p.add_argument("--budget-seconds", type=positive_seconds, default=None,
                   help="as neuronasv confirm --budget-seconds")  # fmt: skip
    p.add_argument("--samples", type=positive_int, default=None,
                   help="as neuronasv confirm --samples")  # fmt: skip
    p.add_argument("--history-dir", type=existing_folder, default=None,
                   help="as neuronasv confirm --history-dir")  # fmt: skip
    p.set_defaults(func=_pr_bench)
    p = sub.add_parser("analyse", help="change points per machine and the history site")
    p.add_argument("--out", required=True)
    p.add_argument("--site", required=True)
    p.add_argument("--traces-dir", default=None)
    p.add_argument("--site-url", default=os.environ.get("SITE_URL") or None)
    p.add_argument("--title", default=None)
    p.add_argument("--cache-dir", default=None,
                   help="keep parsed files and searched windows here for the next run")  # fmt: skip
    add_store_args(p)
    p.set_defaults(func=_analyse)
    p = sub.add_parser("site-branch", help="put the built site on a branch (never forced)")
    p.add_argument("--site", required=True)
    p.add_argument("--results-branch", default=None, help="refused as the site's branch")
    p.add_argument("--default-branch", default="", help="refused as the site's branch")
    add_store_args(p)
    p.set_defaults(func=_site_branch)
    p = sub.add_parser("issues", help="neuronasv issues-sync of DIR/regressions-<machine>.json")
    p.add_argument("findings_dir", metavar="DIR")
    p.add_argument("--site-url", default=os.environ.get("SITE_URL") or None)
    p.add_argument("--dry-run", action="store_true")
    p.set_defaults(func=lambda a: issues(a.findings_dir, site_url=a.site_url,
                                         dry_run=a.dry_run))  # fmt: skip
    p = sub.add_parser("traces", help="copy the flagged workloads' base and head traces")
    p.add_argument("--findings", required=True, help="neuronasv compare/confirm JSON")
    p.add_argument("--traces-dir", required=True, help="the run's trace store")
    p.add_argument("--machine", required=True, help="asv machine name of the run")
    p.add_argument("--out", required=True, help="folder to fill (created)")
    p.set_defaults(func=_traces)
    requirements_step.add_parser(sub)
    p = sub.add_parser("verdict", help="regression-detected=true|false of a findings document")
    p.add_argument("findings")
    p.set_defaults(func=lambda a: set_output(
        "regression-detected", str(regression_detected(a.findings)).lower()))  # fmt: skip


def _plan(args: argparse.Namespace) -> None:
    repo = repo_of(args)
    check_site_branch(args.site_branch, results_branch=args.branch,
                      default_branch=args.default_branch, repo=repo,
                      remote=args.remote, token_env=args.token_env)  # fmt: skip
    plan(repo, args.commit, machine=args.machine, shards_json=args.shards,
         backfill=args.backfill, store=store_ref(args))  # fmt: skip


def _pr_bench(args: argparse.Namespace) -> None:
    how = PrMeasurement(
        args.machine, args.bench, args.rounds, max_rounds=args.max_rounds,
        budget_seconds=args.budget_seconds, samples=args.samples,
        history_dir=args.history_dir, metrics=args.metrics,
    )  # fmt: skip
    pr_bench(repo_of(args), PullRequestRef(args.pr, args.base, args.head), how,
             out=args.out, traces_out=args.traces_out)  # fmt: skip


def _analyse(args: argparse.Namespace) -> None:
    analyse(repo_of(args), out=args.out, site=args.site, store=store_ref(args),
            opts=SiteOptions(commit_url=commit_url(), site_url=args.site_url,
                             title=args.title, traces_dir=args.traces_dir,
                             cache_dir=args.cache_dir))  # fmt: skip


def _site_branch(args: argparse.Namespace) -> None:
    if not args.branch:
        raise UsageError("site-branch needs --branch (e.g. gh-pages)")
    site_branch(repo_of(args), site=args.site, remote=args.remote, branch=args.branch,
                token_env=args.token_env, results_branch=args.results_branch,
                default_branch=args.default_branch)  # fmt: skip


def _traces(args: argparse.Namespace) -> None:
    from neuronasv.publish.traces import copied_line, pick_traces

    emit(copied_line(pick_traces(args.findings, args.traces_dir, args.machine, args.out),
                      args.out))  # fmt: skip
