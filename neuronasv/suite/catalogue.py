"""The per-machine op catalogue: which per-op asv series the suite declares on this runner.

asv fixes a benchmark's params when it imports the suite, so the ``op`` param of every
``devtime_op`` benchmark must be known before a commit's benchmarks run. ``neuronasv run``
keeps that list itself, per machine, beside the results::

    <results_dir>/<machine>/op-catalogue.neuronasv-ops

The file is the **union over every commit run on that machine** of the ops that showed
device time, per backend then workload (the same ``{"backends": {...}}`` shape as the seed
``benchmarks/ops.json``, so the suite reads both with one loader). Before each commit's asv
run the runner profiles the commit once (:mod:`neuronasv.run.prepass`), adds the ops found
there, and points the suite at this file (``NEURONASV_OPS_CATALOGUE``); after the run it
adds the ops of the profiles asv's own ``setup_cache`` took (a commit whose code predates
the pre-pass). So:

- a series never disappears: an op stays declared after its last commit (asv shows ``n/a``
  where it does not run, never a zero);
- a new op gets its series from the commit it first appears in (``first_seen`` records it);
- no hand-kept list is needed; the seed ``ops.json`` only adds names.

The name does not end in ``.json`` on purpose: asv loads every ``*.json`` under the results
folder as a results file. The file is not pushed to the results branch
(:mod:`neuronasv.store.gitstore` keeps result files only); when it is missing (a fresh
runner after ``neuronasv store pull``) the runner rebuilds it from the run sidecars of that
machine, which hold every run's full op tables, and merges sidecars newer than the file in
the same way (:func:`neuronasv.run.records.refresh_from_sidecars`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from neuronasv.errors import CorruptResultsError
from neuronasv.fileio import write_atomic

if TYPE_CHECKING:
    from neuronasv.model import WorkloadProfile

__all__ = [
    "CATALOGUE_NAME",
    "CATALOGUE_VERSION",
    "OpCatalogue",
    "catalogue_path",
    "load_catalogue",
    "ops_from_profiles",
    "save_catalogue",
]

CATALOGUE_NAME = "op-catalogue.neuronasv-ops"
#: Schema history: 1 — first version (backends -> workload -> sorted ops; first_seen).
CATALOGUE_VERSION = 1
_HINT = "delete the file: `neuronasv run` rebuilds it from the sidecars"

OpTable = Mapping[str, Iterable[str]]


@dataclass(frozen=True)
class OpCatalogue:
    """Ops per backend and workload, each with the commit it was first seen in.

    Attributes:
        backends: ``{backend: {workload: (op, ...)}}``, ops sorted.
        first_seen: ``{backend: {workload: {op: commit hash}}}`` (``""`` when unknown).
    """

    backends: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    first_seen: Mapping[str, Mapping[str, Mapping[str, str]]] = field(default_factory=dict)

    def ops(self, backend: str, workload: str) -> tuple[str, ...]:
        return tuple(self.backends.get(backend, {}).get(workload, ()))

    def merge(self, backend: str, found: OpTable, commit: str = "") -> OpCatalogue:
        """A new catalogue with ``found`` (``{workload: ops}``) added; never removes an op."""
        backends = {b: dict(t) for b, t in self.backends.items()}
        seen = {b: {w: dict(o) for w, o in t.items()} for b, t in self.first_seen.items()}
        table = backends.setdefault(backend, {})
        first = seen.setdefault(backend, {})
        for workload, ops in found.items():
            have = set(table.get(workload, ()))
            new = {str(o) for o in ops} - have
            if not new and workload in table:
                continue
            table[workload] = tuple(sorted(have | new))
            marks = first.setdefault(workload, {})
            for op in new:
                marks.setdefault(op, commit)
        return OpCatalogue(backends=backends, first_seen=seen)

    def added(self, other: OpCatalogue, backend: str) -> dict[str, list[str]]:
        """Ops in ``self`` that ``other`` lacks, for ``backend`` (``{workload: [op]}``)."""
        out: dict[str, list[str]] = {}
        for workload, ops in self.backends.get(backend, {}).items():
            new = sorted(set(ops) - set(other.ops(backend, workload)))
            if new:
                out[workload] = new
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "version": CATALOGUE_VERSION,
            "note": (
                "Per-op asv series declared on this machine (union over every commit run"
                " here); written by `neuronasv run`, read by the suite through"
                " NEURONASV_OPS_CATALOGUE. Safe to delete: it is rebuilt from the sidecars."
            ),
            "backends": {
                b: {w: list(ops) for w, ops in sorted(t.items())}
                for b, t in sorted(self.backends.items())
            },
            "first_seen": {
                b: {w: dict(sorted(o.items())) for w, o in sorted(t.items())}
                for b, t in sorted(self.first_seen.items())
            },
        }

    @classmethod
    def from_json(cls, data: Any, source: str = "<catalogue>") -> OpCatalogue:
        if not isinstance(data, dict):
            raise CorruptResultsError(
                f"{source}: an op catalogue must be a JSON object", hint=_HINT
            )
        version = data.get("version")
        if version != CATALOGUE_VERSION:
            raise CorruptResultsError(
                f"{source}: op catalogue version {version!r} is not supported"
                f" (this neuronasv reads version {CATALOGUE_VERSION})",
                hint=_HINT,
            )
        try:
            backends = {
                str(b): {str(w): tuple(sorted(str(o) for o in ops)) for w, ops in t.items()}
                for b, t in data["backends"].items()
            }
            first = {
                str(b): {str(w): {str(o): str(c) for o, c in m.items()} for w, m in t.items()}
                for b, t in data.get("first_seen", {}).items()
            }
        except (KeyError, TypeError, AttributeError) as exc:
            raise CorruptResultsError(
                f"{source}: malformed op catalogue: {exc}", hint=_HINT
            ) from exc
        return cls(backends=backends, first_seen=first)


def catalogue_path(results_dir: str, machine: str) -> str:
    """``<results_dir>/<machine>/op-catalogue.neuronasv-ops``."""
    return os.path.join(results_dir, machine, CATALOGUE_NAME)


def load_catalogue(path: str) -> OpCatalogue:
    """The catalogue at ``path``; an empty one when the file does not exist.

    Raises:
        CorruptResultsError: the file exists but is not a catalogue this version reads.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return OpCatalogue()
    except (OSError, ValueError) as exc:
        raise CorruptResultsError(
            f"{path}: unreadable op catalogue: {exc}",
            hint="delete the file: `neuronasv run` rebuilds it from the sidecars",
        ) from exc
    return OpCatalogue.from_json(data, path)


def save_catalogue(path: str, catalogue: OpCatalogue) -> None:
    """Write atomically (a reader never sees half a file)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_atomic(path, json.dumps(catalogue.to_json(), indent=1, sort_keys=False) + "\n")


def ops_from_profiles(profiles: Iterable[WorkloadProfile]) -> dict[str, set[str]]:
    """``{workload: ops}`` of profiles (``model.WorkloadProfile``): ops with device time.

    An op counts when any of its samples is above zero — the rule of the seed tool
    (``python -m benchmarks._ops``): host-only rows on an accelerator (no kernel) would be
    all-zero series. Module scopes count the same way, as ``module:<path>`` entries (the
    ``devtime_op`` param of a module series; docs/asv.md).
    """
    out: dict[str, set[str]] = {}
    for prof in profiles:
        ops = out.setdefault(prof.name, set())
        for op, samples in prof.series_samples().items():
            if op is not None and max(samples, default=0.0) > 0:
                ops.add(op)
    return out
