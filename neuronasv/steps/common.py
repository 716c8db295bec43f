"""What several steps resolve the same way: the results folder, acknowledgements, floors."""

from __future__ import annotations

import datetime
import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

from neuronasv.errors import ResultsError

if TYPE_CHECKING:
    from neuronasv.analyse.acks import Acknowledgement
    from neuronasv.analyse.floors import FloorKey, NoiseFloor
    from neuronasv.model import FindingsDocument
    from neuronasv.store.cachekey import CacheKey

__all__ = [
    "Acks",
    "Report",
    "acks_of",
    "floors_of",
    "now",
    "report_of",
    "results_folder",
    "signed_cache",
    "warn_load_errors",
]

log = logging.getLogger(__name__)

#: Acknowledgements: a file, the checkout's own file (None), or given.
Acks: TypeAlias = "str | Sequence[Acknowledgement] | None"
#: A findings document: a file or given.
Report: TypeAlias = "str | FindingsDocument"


def now() -> str:
    """The ``created`` stamp of a document made now (UTC, seconds)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def results_folder(results_dir: str | None, repo: str | None) -> str:
    """``results_dir`` (or the repository config's), which must exist: exit 5 naming it."""
    from neuronasv.store.history import default_results_dir

    rdir = str(results_dir or default_results_dir(repo or "."))
    if not os.path.isdir(rdir):
        raise ResultsError(
            f"results folder {rdir} "
            + ("is not a folder" if os.path.exists(rdir) else "does not exist"),
            hint="measure first with `neuronasv run COMMIT`, or pass --results-dir",
        )
    return rdir


def acks_of(acks: Acks, repo: str | None) -> list[Acknowledgement]:
    """The acknowledgements: of the file ``acks``, else of ``REPO/.neuronasv/acknowledgements.json``
    (none without a repository), or ``acks`` as given."""
    from neuronasv.analyse.acks import ACKS_PATH, load_acks

    if acks is None:
        return load_acks(os.path.join(repo, ACKS_PATH)) if repo else []
    if isinstance(acks, str):
        return load_acks(acks)
    return list(acks)


def report_of(report: Report) -> FindingsDocument:
    """A findings document, read when it is a path."""
    if isinstance(report, str):
        from neuronasv.report.load import load_findings

        return load_findings(report)
    return report


def floors_of(
    history_dir: str | None, no_floor: bool, machine: str, exclude: tuple[str, ...]
) -> dict[FloorKey, NoiseFloor] | None:
    """Noise floors from ``history_dir`` ({} with ``no_floor``; None: neither given)."""
    if no_floor:
        return {}
    if not history_dir:
        return None
    from neuronasv.analyse.floors import noise_floors
    from neuronasv.store.history import load_history

    return noise_floors(load_history(history_dir, machine=machine), machine, exclude=exclude)


def warn_load_errors(errors: Sequence[str], limit: int = 10) -> None:
    """Results files that could not be read, on stderr (the rest were loaded)."""
    for err in errors[:limit]:
        log.warning(f"skipped: {err}")
    if len(errors) > limit:
        log.warning(f"... and {len(errors) - limit} more")


def signed_cache(cache_dir: str | None, key_file: str | None) -> tuple[str, CacheKey] | None:
    """A ``--cache-dir`` and the key that signs its entries (store/cachekey.py), or None: no
    cache asked for, or no key to be had (said once; the run goes on without it)."""
    from neuronasv.store.cachekey import cache_key

    if not cache_dir:
        return None
    try:
        os.makedirs(cache_dir, exist_ok=True)
    except OSError as exc:
        log.warning(f"--cache-dir {cache_dir} not used: {exc.strerror or exc}")
        return None
    key, where = cache_key(cache_dir, key_file)
    if key is None:
        log.warning(f"--cache-dir {cache_dir} not used: {where}")
        return None
    log.debug(f"--cache-dir {cache_dir}: entries signed with the key of {where}")
    return cache_dir, key
