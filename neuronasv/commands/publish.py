"""``neuronasv publish``: the static history site (+ optionally asv's own site)."""

from __future__ import annotations

import argparse
import logging
import os
import time
from typing import Any

from neuronasv.commands.args import (
    add_repo_arg,
    command_parser,
    existing_dir,
    existing_file,
    int_at_least,
    machine_name,
    output_dir,
    repo_dir,
)
from neuronasv.errors import ResultsError
from neuronasv.model import FindingsDocument
from neuronasv.report.load import load_findings
from neuronasv.store.asvconf import TRACES_SUBDIR, traces_dir_for
from neuronasv.store.git import git_for

log = logging.getLogger(__name__)


def add_parser(subparsers: Any) -> None:
    p = command_parser(
        subparsers,
        "publish",
        exits={0: None, 2: None, 5: None},
        raw=False,
        description="Write a static site from an asv results folder: index.html at the root of"
        " --out, one page per workload, regressions.json and regressions.atom. Works from the"
        " file system with no network. Incremental: parsed results are cached per file and"
        " only changed data files are rewritten.",
    )
    p.add_argument(
        "--results-dir",
        default=None,
        help="asv results folder (default: asv.conf.json's results_dir in --repo or here,"
        " .asv/results for this project; like compare/regressions)",
    )
    p.add_argument(
        "--out",
        type=output_dir,
        default="site",
        help="output folder (default: site); new, empty, or written by an earlier publish",
    )
    add_repo_arg(
        p, default=None, purpose="commit order", default_text="none: asv dates give the order"
    )
    p.add_argument("--machine", type=machine_name, default=None, help="only this machine")
    p.add_argument(
        "--findings",
        action="append",
        type=existing_file,
        default=[],
        help="`neuronasv regressions --format json` output: change points and the newest"
        " commit against its parent (repeat: one per machine); a compare/confirm document"
        " of a machine's newest commit is accepted too",
    )
    p.add_argument(
        "--detect",
        action="store_true",
        help="without --findings: detect change points here"
        " (loads the full history: small histories only)",
    )
    p.add_argument("--base-url", default="", help="absolute site URL (used for feed links)")
    p.add_argument(
        "--commit-url",
        default=None,
        help="commit link template, e.g. https://github.com/ORG/REPO/commit/{commit}",
    )
    p.add_argument(
        "--trace-url",
        default=None,
        help="trace link template with {path} (sidecar trace paths); default: the copies"
        " made from --traces-dir",
    )
    p.add_argument(
        "--traces-dir",
        type=existing_dir,
        default=None,
        help="trace store to copy the sidecars' traces from into OUT/traces/ (default:"
        " RESULTS_DIR/.traces or REPO/.asv/traces, the first that exists); each op chart's"
        " commit links its trace",
    )
    p.add_argument(
        "--no-traces", action="store_true", help="copy and link no traces (unless --trace-url)"
    )
    p.add_argument(
        "--title", help="the site's title (default: asv.conf.json's project + ' history')"
    )
    p.add_argument(
        "--cache-dir",
        type=output_dir,
        default=None,
        help="parse cache (default: OUT/.neuronasv-cache)",
    )
    p.add_argument("--no-cache", action="store_true", help="parse every results file")
    p.add_argument(
        "--workers",
        type=int_at_least(1),
        default=None,
        help="parser processes (default: CPUs, max 8)",
    )
    p.add_argument("--asv", action="store_true", help="also run `asv publish` into OUT/asv (slow)")
    p.add_argument(
        "--asv-config", default="asv.conf.json", help="asv config for --asv (asv.conf.json)"
    )
    p.set_defaults(func=run)


def _default_title(repo: str | None) -> str:
    """``<project> history``: the project named in the repository's asv.conf.json."""
    from neuronasv.store.asvconf import project_name

    return f"{project_name(repo or '.') or 'neuronasv'} history"


def _commit_url_from_repo(repo: str | None) -> str | None:
    """``https://github.com/o/r/commit/{commit}`` from the repo's origin, when it is GitHub."""
    git = git_for(repo)
    url = (git.remote_url("origin") if git is not None else None) or ""
    for prefix in ("git@github.com:", "https://github.com/", "ssh://git@github.com/"):
        if url.startswith(prefix):
            path = url[len(prefix) :].removesuffix(".git")
            return f"https://github.com/{path}/commit/{{commit}}"
    return None


def _newest_op_modules(
    results_dir: str, machine: str, commits: list[str]
) -> dict[tuple[str, str, str, str], str]:
    """Which module each op sits in, from the newest run sidecar of ``machine`` (the scan
    skips the sidecars' profiles for speed; one file per machine is cheap). Empty when
    that sidecar is missing or unreadable: the site then lists ops after the modules."""
    from neuronasv.publish.sitedata import op_modules_of
    from neuronasv.store.asvresults import AsvResultsReader
    from neuronasv.store.layout import result_files_of_commit

    if not commits:
        return {}
    reader = AsvResultsReader()
    for path in result_files_of_commit(results_dir, machine, commits[-1]):
        sidecar = reader.read_sidecar(path)[0]
        if sidecar is not None and sidecar.commit_hash == commits[-1]:
            return op_modules_of(sidecar.profiles)
    return {}


def run(args: argparse.Namespace) -> int:
    from neuronasv.publish import PublishOptions, publish_site, scan_results, summary_cache
    from neuronasv.publish.site import check_site_folder

    t0 = time.perf_counter()
    _resolve_results_dir(args)
    check_site_folder(args.out)  # before anything (the cache included) is written there
    # Every --findings document is read before anything is written (a bad one: usage).
    findings: list[FindingsDocument] | None = (
        [load_findings(path) for path in args.findings] if args.findings else None
    )
    cache = None
    if not args.no_cache:
        cache = summary_cache(args.cache_dir or os.path.join(args.out, ".neuronasv-cache"))
    data = scan_results(
        args.results_dir,
        machine=args.machine,
        repo=args.repo,
        cache=cache,
        workers=args.workers,
    )
    for md in data.machines:
        md.op_modules.update(_newest_op_modules(args.results_dir, md.name, md.commits))
    if findings is None and args.detect:
        findings = _detected_findings(args)
    traces_dir = _traces_dir(args)
    opts = PublishOptions(
        base_url=args.base_url,
        commit_url=args.commit_url or _commit_url_from_repo(args.repo),
        trace_url=args.trace_url,
        traces_dir=None if args.no_traces or args.trace_url else traces_dir,
        title=args.title or _default_title(args.repo),
    )
    report = publish_site(data, args.out, findings=findings, options=opts)
    hits = (
        f", cache {cache.stats.hits + cache.stats.digest_hits} hits / {cache.stats.misses} misses"
        if cache
        else ""
    )
    print(
        f"published {report.series} series, {report.pages} workload pages to"
        f" {os.path.join(args.out, 'index.html')}: {len(report.written)} files written,"
        f" {report.skipped} unchanged{hits} ({time.perf_counter() - t0:.1f} s)"
    )
    for err in data.load_errors[:20]:
        log.warning(f"{err}")
    if args.asv:
        _asv_publish(args)
    return 0


def _resolve_results_dir(args: argparse.Namespace) -> None:
    """``args.results_dir``, defaulted from the repository's asv configuration; it must exist."""
    from neuronasv.store.history import default_results_dir

    if args.results_dir is None:
        args.results_dir = default_results_dir(args.repo or repo_dir("."))  # the root's config
    if not os.path.isdir(args.results_dir):
        raise ResultsError(
            f"results folder {args.results_dir} not found", hint="pass --results-dir"
        )


def _detected_findings(args: argparse.Namespace) -> list[FindingsDocument]:
    """``--detect``: the findings of each machine, as `neuronasv regressions` makes them."""
    from neuronasv.analyse.newest import newest_for, regressions_document
    from neuronasv.publish.cache import ParseCache
    from neuronasv.store.history import load_history

    hcache: ParseCache[Any] | None = (
        ParseCache(args.cache_dir or os.path.join(args.out, ".neuronasv-cache"))
        if not args.no_cache
        else None
    )
    git = git_for(args.repo)
    history = load_history(args.results_dir, machine=args.machine, git=git, cache=hcache)
    # as `neuronasv regressions` does, per machine: change points + newest vs parent
    return [
        regressions_document(
            history,
            machine=m,
            newest=newest_for(history, m, git),
        )
        for m in ([args.machine] if args.machine else history.machines)
    ]


def _traces_dir(args: argparse.Namespace) -> str | None:
    """``--traces-dir``, else where `neuronasv run` puts them: inside the results folder,
    else REPO/.asv/traces (None when neither exists)."""
    if args.traces_dir is not None:
        return args.traces_dir
    found = [os.path.join(args.results_dir, TRACES_SUBDIR)]
    found += [traces_dir_for(args.repo)] if args.repo else []
    return next((d for d in found if os.path.isdir(d)), None)


def _asv_publish(args: argparse.Namespace) -> None:
    """``--asv``: asv's own site beside ours, under ``OUT/asv``."""
    from neuronasv.publish import run_asv_publish

    t1 = time.perf_counter()
    run_asv_publish(
        config=args.asv_config,
        results_dir=args.results_dir,
        html_dir=os.path.join(args.out, "asv"),
        repo=args.repo,
    )
    print(
        f"asv publish -> {os.path.join(args.out, 'asv', 'index.html')}"
        f" ({time.perf_counter() - t1:.1f} s)"
    )
