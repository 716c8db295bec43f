"""``neuronasv publish``: the static history site (+ optionally asv's own site)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from neuronasv.commands.args import (
    add_repo_arg,
    command_parser,
    existing_dir,
    existing_file,
    int_at_least,
    machine_name,
    output_dir,
)
from neuronasv.log import emit

if TYPE_CHECKING:
    from neuronasv.steps.publish import PublishOptions

__all__ = ["add_parser", "options", "run"]


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
        help="parser and page-rendering processes (default: CPUs, max 8)",
    )
    p.add_argument("--asv", action="store_true", help="also run `asv publish` into OUT/asv (slow)")
    p.add_argument(
        "--asv-config", default="asv.conf.json", help="asv config for --asv (asv.conf.json)"
    )
    p.set_defaults(func=run)


def options(args: argparse.Namespace) -> PublishOptions:
    """The step's options from the parsed arguments."""
    from neuronasv.steps.publish import PublishOptions

    return PublishOptions(
        out=args.out, results_dir=args.results_dir, repo=args.repo, machine=args.machine,
        findings=tuple(args.findings), detect=args.detect, base_url=args.base_url,
        commit_url=args.commit_url, trace_url=args.trace_url, traces_dir=args.traces_dir,
        no_traces=args.no_traces, title=args.title, cache_dir=args.cache_dir,
        no_cache=args.no_cache, workers=args.workers, asv=args.asv, asv_config=args.asv_config,
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    import time

    from neuronasv.steps.publish import publish, publish_asv

    opts = options(args)
    done = publish(opts)
    emit(done.line())
    if args.asv:
        t1 = time.perf_counter()
        index = publish_asv(opts, done.results_dir)
        emit(f"asv publish -> {index} ({time.perf_counter() - t1:.1f} s)")
    return 0
