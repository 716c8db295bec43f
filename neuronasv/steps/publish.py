"""``publish``: the static history site from a results folder (``neuronasv publish``)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from neuronasv.errors import ResultsError
from neuronasv.steps.common import Report, report_of

if TYPE_CHECKING:
    from neuronasv.model import FindingsDocument
    from neuronasv.publish import PublishReport
    from neuronasv.store.histcache import ColumnsDiskCache

__all__ = ["PublishOptions", "Published", "newest_op_modules", "publish", "publish_asv"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PublishOptions:
    """What ``neuronasv publish`` writes (each field is the flag of the same name).

    Attributes:
        out: the site folder (new, empty, or an earlier publish's).
        results_dir: asv results folder (None: the repository config's).
        repo: the git checkout (commit order); None: asv dates give the order.
        machine: only this machine.
        findings: regressions documents (files or documents), one per machine.
        detect: without ``findings``, detect change points here (small histories).
        base_url, commit_url, trace_url, title: the site's links and title (None:
            derived from the repository).
        traces_dir, no_traces: where the traces are copied from; none at all.
        cache_dir, no_cache, workers: the parse cache and parser processes.
        cache_key_file: where the key signing the cache's entries is when not beside
            ``cache_dir`` (store/cachekey.py; a folder of several caches keeps one key).
        asv, asv_config: also run ``asv publish`` into ``OUT/asv``.
    """

    out: str = "site"
    results_dir: str | None = None
    repo: str | None = None
    machine: str | None = None
    findings: Sequence[Report] = ()
    detect: bool = False
    base_url: str = ""
    commit_url: str | None = None
    trace_url: str | None = None
    traces_dir: str | None = None
    no_traces: bool = False
    title: str | None = None
    cache_dir: str | None = None
    no_cache: bool = False
    workers: int | None = None
    asv: bool = False
    cache_key_file: str | None = None
    asv_config: str = "asv.conf.json"


@dataclass(frozen=True)
class Published:
    """What was written, with the parse cache's counts and the load errors."""

    report: PublishReport
    index: str
    seconds: float
    load_errors: tuple[str, ...] = ()
    cache_hits: int | None = None
    cache_misses: int = 0
    results_dir: str = ""

    def line(self) -> str:
        """The command's summary line."""
        r = self.report
        hits = (
            f", cache {self.cache_hits} hits / {self.cache_misses} misses"
            if self.cache_hits is not None
            else ""
        )
        return (
            f"published {r.series} series, {r.pages} workload pages to {self.index}:"
            f" {len(r.written)} files written, {r.skipped} unchanged{hits}"
            f" ({self.seconds:.1f} s)"
        )


def _default_title(repo: str | None) -> str:
    """``<project> history``: the project named in the repository's asv.conf.json."""
    from neuronasv.store.asvconf import project_name

    return f"{project_name(repo or '.') or 'neuronasv'} history"


def _commit_url_from_repo(repo: str | None) -> str | None:
    """``https://github.com/o/r/commit/{commit}`` from the repo's origin, when it is GitHub."""
    from neuronasv.store.git import git_for

    git = git_for(repo)
    url = (git.remote_url("origin") if git is not None else None) or ""
    for prefix in ("git@github.com:", "https://github.com/", "ssh://git@github.com/"):
        if url.startswith(prefix):
            path = url[len(prefix) :].removesuffix(".git")
            return f"https://github.com/{path}/commit/{{commit}}"
    return None


def newest_op_modules(
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


def _results_dir(opts: PublishOptions) -> str:
    """``results_dir``, defaulted from the repository's asv configuration; it must exist."""
    from neuronasv.store.asvconf import checkout_root
    from neuronasv.store.history import default_results_dir

    rdir = opts.results_dir
    if rdir is None:
        rdir = default_results_dir(opts.repo or checkout_root("."))  # the root's config
    if not os.path.isdir(rdir):
        raise ResultsError(f"results folder {rdir} not found", hint="pass --results-dir")
    return rdir


def _detected_findings(opts: PublishOptions, rdir: str) -> list[FindingsDocument]:
    """``detect``: each machine's findings, as ``neuronasv regressions`` makes them."""
    from neuronasv.steps.regressions import (
        RegressionsOptions,
        machines_in,
        regressions_per_machine,
    )

    machines = [opts.machine] if opts.machine else machines_in(rdir)
    ropts = RegressionsOptions(results_dir=rdir, repo=opts.repo)
    return list(regressions_per_machine(ropts, machines).values())


def _traces_dir(opts: PublishOptions, rdir: str) -> str | None:
    """``traces_dir``, else where ``neuronasv run`` puts them: inside the results folder,
    else REPO/.asv/traces (None when neither exists)."""
    from neuronasv.store.asvconf import TRACES_SUBDIR, traces_dir_for

    if opts.traces_dir is not None:
        return opts.traces_dir
    found = [os.path.join(rdir, TRACES_SUBDIR)]
    found += [traces_dir_for(opts.repo)] if opts.repo else []
    return next((d for d in found if os.path.isdir(d)), None)


def _cache(opts: PublishOptions) -> ColumnsDiskCache | None:
    """The parse cache: ``regressions --cache-dir``'s own kind (one per results file,
    signed with the key beside the folder or ``NEURONASV_CACHE_KEY``; store/cachekey.py),
    so a publish and a regressions run sharing one folder share its entries."""
    from neuronasv.steps.common import signed_cache
    from neuronasv.store.histcache import ColumnsDiskCache

    if opts.no_cache:
        return None
    folder = opts.cache_dir or os.path.join(opts.out, ".neuronasv-cache")
    got = signed_cache(folder, opts.cache_key_file)
    return ColumnsDiskCache(*got) if got else None


def publish(opts: PublishOptions) -> Published:
    """Write the site into ``opts.out`` (and asv's own under ``OUT/asv`` with ``asv``)."""
    from neuronasv.publish import PublishOptions as SiteOptions
    from neuronasv.publish import publish_site, scan_results
    from neuronasv.publish.site import check_site_folder

    t0 = time.perf_counter()
    rdir = _results_dir(opts)
    check_site_folder(opts.out)  # before anything (the cache included) is written there
    # Every findings document is read before anything is written (a bad one: usage).
    findings: list[FindingsDocument] | None = (
        [report_of(f) for f in opts.findings] if opts.findings else None
    )
    cache = _cache(opts)
    data = scan_results(
        rdir,
        machine=opts.machine,
        repo=opts.repo,
        cache=cache,
        workers=opts.workers,
    )
    for md in data.machines:
        md.op_modules.update(newest_op_modules(rdir, md.name, md.commits))
    if findings is None and opts.detect:
        findings = _detected_findings(opts, rdir)
    traces_dir = _traces_dir(opts, rdir)
    site = SiteOptions(
        base_url=opts.base_url,
        commit_url=opts.commit_url or _commit_url_from_repo(opts.repo),
        trace_url=opts.trace_url,
        traces_dir=None if opts.no_traces or opts.trace_url else traces_dir,
        title=opts.title or _default_title(opts.repo),
    )
    report = publish_site(data, opts.out, findings=findings, options=site, workers=opts.workers)
    for err in data.load_errors[:20]:
        log.warning(f"{err}")
    done = Published(
        report=report,
        index=os.path.join(opts.out, "index.html"),
        seconds=time.perf_counter() - t0,
        load_errors=tuple(data.load_errors),
        cache_hits=None if cache is None else cache.hits,
        cache_misses=0 if cache is None else cache.misses,
        results_dir=rdir,
    )
    return done


def publish_asv(opts: PublishOptions, results_dir: str) -> str:
    """``asv``: asv's own site beside ours, under ``OUT/asv``; its index page."""
    from neuronasv.publish import run_asv_publish

    html = os.path.join(opts.out, "asv")
    run_asv_publish(config=opts.asv_config, results_dir=results_dir, html_dir=html,
                    repo=opts.repo)  # fmt: skip
    return os.path.join(html, "index.html")
