"""The machine's records kept beside its results, brought up to date by a run: the op
catalogue (every op series a workload has had, so a new op has its asv series from the
commit that adds it) and the calibrated CPU peak (the roof of "of peak", measured once per
machine, stored only when measured honestly). Both live under ``<results>/<machine>/``
(names: :mod:`neuronasv.store.layout`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from neuronasv import env as suite_env
from neuronasv.fileio import write_atomic
from neuronasv.model import WorkloadProfile
from neuronasv.suite.catalogue import (
    OpCatalogue,
    load_catalogue,
    ops_from_profiles,
    save_catalogue,
)

log = logging.getLogger(__name__)


#: Above this many new op series a run lists counts per workload, not names.
_LIST_NEW_OPS = 10


def prepare_catalogue(path: str, backend: str) -> None:
    """Bring the machine's op catalogue up to date with its sidecars (see catalogue module).

    Missing file: rebuilt from every sidecar of the machine (a fresh runner after a pull).
    Present: sidecars newer than it are merged. A catalogue this version cannot read stops
    the run before anything is measured (CorruptResultsError, nothing is overwritten).
    """
    try:
        since: float | None = os.path.getmtime(path)
    except OSError:
        since = None
    before = load_catalogue(path)
    after, read = refresh_from_sidecars(before, os.path.dirname(path), since=since)
    if after != before:
        save_catalogue(path, after)
    ops = sum(len(o) for o in after.backends.get(backend, {}).values())
    note = f", {read} sidecar(s) merged" if read else ""
    log.info(f"op catalogue {path}: {ops} op series declared for {backend}{note}")


def prepare_peaks(
    path: str, backend: str, *, measure: Callable[..., Any] | None = None
) -> None:
    """The machine's calibrated CPU roof (the roof of "of peak"): read it, or — when there is
    none yet, an outdated one, or one of other threads — measure it once, now, before any
    benchmark loads the machine, and store it with the machine's record. The measurement
    follows the rules of ``doctor --calibrate`` (:mod:`neuronasv.measure.cpu_roof`): taken
    under load, unsteady or implausible, nothing is stored, the run goes on without a roof
    (no view shows a fraction of peak) and the next run tries again. Backends with a
    datasheet roof (accelerators) have nothing to do here. ``measure``: the measurement
    (default :func:`~neuronasv.measure.cpu_roof.measure_cpu_roof`; injectable for tests)."""
    from neuronasv.errors import CalibrationRefused
    from neuronasv.measure.backends import backend_named
    from neuronasv.measure.calibration import calibrate, read_calibration, shown

    chosen = backend_named(backend)
    if not chosen.roof_is_calibrated or suite_env.PEAK.read():
        return
    where = f"peak {shown(path)}"
    peak = read_calibration(path)  # a corrupt file: exit 5 before anything runs
    if peak is not None and chosen.roof({}, env=os.environ, calibration=peak) is not None:
        log.info(f"{where}: {peak.describe()}")
        return
    if peak is not None:
        why = f"the stored one is for other threads ({peak.name})"
    elif os.path.lexists(path):
        why = "the stored one is of an older format (schema 1), not trusted"
    else:
        why = "none yet for this machine"
    try:
        peak, text = calibrate(chosen) if measure is None else calibrate(chosen, measure=measure)
    except CalibrationRefused as exc:
        log.info(
            f"{where}: {why}; {exc.message}; this run shows no fraction of peak"
            " (the next run measures again; `neuronasv doctor --calibrate` on a quiet machine)"
        )
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, text)
    log.info(
        f"{where}: {why}; calibrated: {peak.describe()}"
        " (`neuronasv doctor --calibrate` re-measures it)"
    )


def grow_catalogue(
    path: str,
    backend: str,
    profiles: Sequence[WorkloadProfile],
    sha: str,
    prefix: str,
) -> OpCatalogue:
    """Add the ops of ``profiles`` (a commit's pre-pass) to the catalogue; say what is new."""
    before = load_catalogue(path)
    after = before.merge(backend, ops_from_profiles(profiles), sha)
    if after != before:
        save_catalogue(path, after)
        added = after.added(before, backend)
        count = sum(len(v) for v in added.values())
        if count > _LIST_NEW_OPS:  # a first run: counts, not hundreds of names
            listed = "; ".join(f"{w}: {len(ops)}" for w, ops in sorted(added.items()))
            log.info(f"{prefix} op catalogue: {count} new op series ({listed})")
        elif added:
            listed = "; ".join(f"{w}: {', '.join(ops)}" for w, ops in sorted(added.items()))
            log.info(f"{prefix} op catalogue: {count} new op series ({listed})")
    return after


def refresh_from_sidecars(
    catalogue: OpCatalogue, machine_dir: str, *, since: float | None
) -> tuple[OpCatalogue, int]:
    """Merge the op tables of the machine's sidecars modified after ``since`` (all if None).

    Unreadable sidecars are skipped (the history loader reports them). Returns the new
    catalogue and how many sidecars were read.
    """
    from neuronasv.store.asvresults import AsvResultsReader
    from neuronasv.store.layout import SIDECAR_SUFFIX, parse_result_name, result_path_of_sidecar

    if not os.path.isdir(machine_dir):
        return catalogue, 0
    reader = AsvResultsReader()
    read = 0
    for name in sorted(os.listdir(machine_dir)):
        if not name.endswith(SIDECAR_SUFFIX) or parse_result_name(name) is None:
            continue
        path = os.path.join(machine_dir, name)
        try:
            if since is not None and os.path.getmtime(path) <= since:
                continue
        except OSError:
            continue
        sidecar = reader.read_sidecar(result_path_of_sidecar(path))[0]
        if sidecar is None:
            continue
        read += 1
        backend = sidecar.fingerprint.get("backend", "")
        if backend:
            catalogue = catalogue.merge(
                backend, ops_from_profiles(sidecar.profiles), sidecar.commit_hash
            )
    return catalogue, read
