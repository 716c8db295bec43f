"""Every path rule of a results folder, in one place (modelled on asv's ``get_filename``).

A results folder, as asv writes it and as neuronasv adds to it::

    <results>/benchmarks.json                       asv: every benchmark's metadata (units)
    <results>/<machine>/machine.json                asv: the machine's facts
    <results>/<machine>/calibration.peaks           neuronasv: the machine's calibrated
                                                    CPU peak (measure/peaks.py)
    <results>/<machine>/<hash8>-<env>.json          asv: one run's results (asv's name)
    <results>/<machine>/<hash8>-<env>.neuronasv     neuronasv: that run's sidecar (not
                                                    ``.json``, so asv's ``iter_results``
                                                    skips it)
    <results>/<machine>/bisect-<key>.bisect         neuronasv: one bisection's record
                                                    (``neuronasv bisect``; key: 16 hex)
    <traces>/<machine>/<hash8>/<trace file>         neuronasv: traces kept by ``run``

Nothing else spells these names: writers and readers (``run``, the history loader, the
site's scan, the results branch, the trace picker) build and parse them here. The sidecar
itself is read only by :class:`neuronasv.store.asvresults.AsvResultsReader`.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
from pathlib import PurePosixPath

__all__ = [
    "BENCHMARKS_FILE",
    "BISECT_SUFFIX",
    "MACHINE_FILE",
    "METADATA_FILES",
    "PEAKS_FILE",
    "RESULT_SUFFIX",
    "SIDECAR_SUFFIX",
    "bisect_file",
    "commit_prefix",
    "is_bisect_name",
    "is_result_file_name",
    "machine_file",
    "parse_result_name",
    "peaks_file",
    "result_file",
    "result_files_of_commit",
    "result_name",
    "result_path_of_sidecar",
    "sidecar_path",
    "trace_dir",
    "trace_parts",
]

RESULT_SUFFIX = ".json"
SIDECAR_SUFFIX = ".neuronasv"
MACHINE_FILE = "machine.json"
#: The machine's calibrated peaks (not ``.json``: asv would try to load it as results).
PEAKS_FILE = "calibration.peaks"
BENCHMARKS_FILE = "benchmarks.json"
#: A bisection's record (not ``.json``: asv would try to load it as results).
BISECT_SUFFIX = ".bisect"
_BISECT_RE = re.compile(r"^bisect-[0-9a-f]{16}\.bisect\Z")
#: asv's metadata files: in a results folder, but not results.
METADATA_FILES = frozenset({MACHINE_FILE, BENCHMARKS_FILE})

_HASH_LEN = 8
_RESULT_RE = re.compile(r"^(?P<hash>[0-9a-f]{8})-(?P<env>.+)\.(?:json|neuronasv)\Z")


def commit_prefix(commit: str) -> str:
    """The commit's part of every per-commit name: its first 8 hex digits, lower case."""
    return commit.strip().lower()[:_HASH_LEN]


def _env_part(env_name: str) -> str:
    # asv's rule: a name of 128 characters or more is replaced by its hash.
    if env_name and len(env_name) >= 128:
        return "env-" + hashlib.md5(env_name.encode("utf-8"), usedforsecurity=False).hexdigest()
    return env_name


def result_name(commit: str, env_name: str) -> str:
    """asv's results file name: ``<hash8>-<env>.json``."""
    return f"{commit[:_HASH_LEN]}-{_env_part(env_name)}{RESULT_SUFFIX}"


def result_file(results_dir: str, machine: str, commit: str, env_name: str) -> str:
    """``<results>/<machine>/<hash8>-<env>.json`` (asv's ``get_filename`` under the folder)."""
    return os.path.join(results_dir, machine, result_name(commit, env_name))


def result_files_of_commit(results_dir: str, machine: str, commit: str) -> list[str]:
    """The results files of ``commit`` on ``machine`` (any environment), sorted."""
    folder = glob.escape(os.path.join(results_dir, machine))
    return sorted(glob.glob(os.path.join(folder, f"{commit[:_HASH_LEN]}-*{RESULT_SUFFIX}")))


def is_result_file_name(path: str, machine: str, commit: str, env_name: str) -> bool:
    """Is ``path`` at asv's own place for that run: ``<machine>/<hash8>-<env>.json``?"""
    folder, name = os.path.split(os.path.abspath(path))
    return name == result_name(commit, env_name) and os.path.basename(folder) == machine


def parse_result_name(name: str) -> tuple[str, str] | None:
    """``abcd1234-env.json`` or its sidecar → ``("abcd1234", "env")``; None otherwise."""
    m = _RESULT_RE.match(PurePosixPath(name).name)
    return (m.group("hash"), m.group("env")) if m else None


def sidecar_path(result_path: str | os.PathLike[str]) -> str:
    """``.../abcd1234-existing-py.json`` -> ``.../abcd1234-existing-py.neuronasv``."""
    path = os.fspath(result_path)
    stem = path[: -len(RESULT_SUFFIX)] if path.endswith(RESULT_SUFFIX) else path
    return stem + SIDECAR_SUFFIX


def result_path_of_sidecar(path: str) -> str:
    """The results file a sidecar belongs to (the inverse of :func:`sidecar_path`)."""
    stem = path[: -len(SIDECAR_SUFFIX)] if path.endswith(SIDECAR_SUFFIX) else path
    return stem + RESULT_SUFFIX


def machine_file(results_dir: str, machine: str) -> str:
    """asv's ``<results>/<machine>/machine.json``."""
    return os.path.join(results_dir, machine, MACHINE_FILE)


def peaks_file(results_dir: str, machine: str) -> str:
    """The machine's calibrated peaks: ``<results>/<machine>/calibration.peaks``."""
    return os.path.join(results_dir, machine, PEAKS_FILE)


def bisect_file(results_dir: str, machine: str, key: str) -> str:
    """A bisection's record: ``<results>/<machine>/bisect-<key>.bisect`` (``key``: 16 hex)."""
    if not re.fullmatch(r"[0-9a-f]{16}", key):
        raise ValueError(f"not a bisection key: {key!r}")
    return os.path.join(results_dir, machine, f"bisect-{key}{BISECT_SUFFIX}")


def is_bisect_name(name: str) -> bool:
    """Is ``name`` (a file name or path) a bisection record's name?"""
    return bool(_BISECT_RE.match(PurePosixPath(name).name))


def trace_parts(machine: str, commit: str) -> tuple[str, str]:
    """A commit's trace folder under the trace store, as parts: ``(machine, hash8)``."""
    return machine, commit[:_HASH_LEN]


def trace_dir(traces_root: str, machine: str, commit: str) -> str:
    """Where a commit's kept traces live: ``<traces>/<machine>/<hash8>``."""
    return os.path.join(traces_root, *trace_parts(machine, commit))
