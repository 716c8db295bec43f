"""Results folder -> :class:`~neuronasv.publish.sitedata.SiteData`: the site's view of the
one column reader.

The site needs medians and quartiles per series and commit, the environment fingerprints
and the trace paths: exactly what :func:`neuronasv.store.columns.load_columns` reads for
``regressions`` (one parse per results file and sidecar, with the loader's checks and
rules, files parsed in worker processes, an optional per-file cache signed with the
cache's key: :class:`neuronasv.store.histcache.ColumnsDiskCache`). This module only puts
its matrices into the site's shape; it reads no file itself (issue 40 item 3: before, a
second parse of the folder with its own cache, stat rule and copy of the layout codec).

Semantics are the loader's: asv ``null`` (failed) and ``NaN`` (not applicable) both draw
no point; a sidecar that cannot be read is a warning and its series keep asv's names; a
file that cannot be read is listed in ``load_errors``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping

from neuronasv.publish.sitedata import MachineData, SeriesInfo, SiteData
from neuronasv.store.columns import Columns, MachineColumns, load_columns
from neuronasv.store.histcache import ColumnsDiskCache

__all__ = ["scan_results", "site_data"]

log = logging.getLogger(__name__)


def scan_results(
    results_dir: str | os.PathLike[str],
    *,
    machine: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    cache: ColumnsDiskCache | None = None,
    workers: int | None = None,
) -> SiteData:
    """Read every results file under ``results_dir`` into per-machine matrices.

    Args:
        results_dir: asv results folder.
        machine: only this machine.
        repo: git repository giving the commit order (else asv's commit dates).
        cache: the signed per-file cache (``regressions --cache-dir``'s); None parses all.
        workers: processes for files that must be parsed (default: CPUs, at most 8;
            1 = in this process).

    Raises:
        ResultsError: the folder does not exist, or two different files for one run.
        CorruptResultsError: a time or memory value <= 0 (the loader's rule).
    """
    # the cache's entries are written by threads while the files are parsed (no fork
    # happens inside: the parser processes are started before the first entry is put)
    with cache.writing_behind() if cache is not None else contextlib.nullcontext():
        columns = load_columns(
            results_dir,
            machine=machine,
            repo=repo,
            cache=cache,
            layouts_dir=cache.layouts_dir if cache is not None else None,
            workers=workers,
        )
    if cache is not None:
        log.info("%d results files from cache, %d parsed", cache.hits, cache.misses)
    return site_data(columns)


def site_data(columns: Columns) -> SiteData:
    """The site's matrices of a folder read by :func:`~neuronasv.store.columns.load_columns`."""
    return SiteData(
        machines=[_machine(mc, columns.fingerprints) for mc in columns.machines],
        load_errors=list(columns.load_errors),
    )


def _machine(mc: MachineColumns, fingerprints: Mapping[tuple[str, str], Mapping[str, str]]
             ) -> MachineData:  # fmt: skip
    col = {c: j for j, c in enumerate(mc.commits)}
    fps = {
        col[c]: fp for (m, c), fp in fingerprints.items() if m == mc.name and c in col
    }
    return MachineData(
        mc.name,
        list(mc.commits),
        mc.dates,
        [SeriesInfo(s.env_name, s.series, s.unit) for s in mc.series],
        mc.values,
        mc.q25,
        mc.q75,
        dict(sorted(fps.items())),
        {col[c]: t for c, t in mc.traces.items()},
    )
