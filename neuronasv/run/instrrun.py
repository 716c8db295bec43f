"""The runner's side of the instructions metric: one valgrind process per commit.

``neuronasv run --metrics devtime,instructions`` calls :func:`instructions_pass` for each
commit after the pre-pass and before ``asv run`` (CPU backend only: on an accelerator the
metric is device time). It

1. builds the client-request helper once per run (:func:`neuronasv.measure.callgrind.
   build_helper`, into the run's temporary folder);
2. runs :mod:`neuronasv.run.instrpass` under ``valgrind --tool=callgrind
   --instr-atstart=no --collect-atstart=no`` with the commit's tree first on the import
   path (:func:`valgrind_command`): torch is imported once for the whole suite;
3. adds the ops it counted to the machine's op catalogue under ``<backend>:instructions``
   (:data:`CATALOGUE_KEY`), so the suite declares their ``instr_op`` series before asv
   imports it;
4. after asv, :func:`attach_counts` puts each configuration's counts on its profile in the
   sidecar (``WorkloadProfile.counted``), with valgrind's and torch's versions.

A pass that fails or is stopped costs only the instruction series of that commit (asv
then records them as skipped); the device-time series run as always.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from neuronasv.keys import profile_key, split_results_key
from neuronasv.measure.backends import takes
from neuronasv.metrics import INSTRUCTIONS, parse_names
from neuronasv.metrics import names as metric_names
from neuronasv.model import WorkloadProfile
from neuronasv.model.counts import PassCounts
from neuronasv.run.instrpass import META_FILE

__all__ = [
    "CATALOGUE_KEY",
    "METRICS",
    "CommitPass",
    "attach_counts",
    "catalogue_ops",
    "default_metrics",
    "parse_metrics",
    "prepare_commit",
    "read_counts",
    "valgrind_command",
]

log = logging.getLogger(__name__)

#: The metrics ``neuronasv run --metrics`` knows (the registry's names).
METRICS: tuple[str, ...] = metric_names()
#: A pass that prints nothing for this long is stopped. It prints a line per
#: configuration (the slowest, the transformer block's backward, takes ~5 s here on a
#: quiet machine; docs/instructions.md), so the pre-pass's limit is generous.
IDLE_TIMEOUT = 1800.0
#: Iterations ``n`` per counted repetition (n, n, 2n after an unused one).
ITERATIONS = 1
#: At most this many configurations counted at once (:func:`pass_jobs`).
MAX_JOBS = 4


def catalogue_key(backend: str) -> str:
    """The op catalogue's backend key of the instruction series (``cpu:instructions``)."""
    return f"{backend}:instructions"


CATALOGUE_KEY = catalogue_key


def default_metrics(
    backend: str,
    requested: tuple[str, ...] | None = None,
    *,
    status: Callable[[], tuple[bool, str]] | None = None,
    announce: bool = True,
) -> tuple[str, ...]:
    """What ``neuronasv run`` measures: ``requested`` (``--metrics``) when given; else
    device time, and on the CPU backend instruction counts too (exact where the CPU's
    timing is noise) when valgrind is usable here — said in one INFO line either way
    (``announce=False``: not said, for a caller that only plans).

    The one home of this default: the reusable workflows pass ``--metrics`` only when the
    caller sets their ``metrics`` input. ``status`` is injected by tests (default
    :func:`neuronasv.measure.callgrind.valgrind_status`).
    """
    if requested is not None:
        return requested
    if not takes(backend, INSTRUCTIONS.name):
        return ("devtime",)
    if status is None:
        from neuronasv.measure.callgrind import valgrind_status

        status = valgrind_status
    usable, line = status()
    if announce:
        log.info(
            "instructions: on, the CPU backend's default (--metrics devtime turns it off)"
            if usable
            else f"instructions: off ({line}); the CPU backend counts them where valgrind is"
        )
    return ("devtime", "instructions") if usable else ("devtime",)


def parse_metrics(text: str) -> tuple[str, ...]:
    """``devtime,instructions`` -> the metrics, in order; ValueError names an unknown one
    (:func:`neuronasv.metrics.parse_names`: the registry's names)."""
    return parse_names(text)


def valgrind_command(
    python: str,
    suite: str,
    *,
    out_dir: str,
    helper: str,
    dumps: str,
    regexes: Sequence[str] = (),
    iterations: int = ITERATIONS,
    valgrind: str = "valgrind",
) -> list[str]:
    """The command line of one commit's instructions pass: :func:`pass_jobs` configurations
    counted at once (a later ``--jobs N`` on the line overrides it)."""
    cmd = [
        valgrind,
        "--tool=callgrind",
        "--instr-atstart=no",  # nothing is instrumented until a configuration starts
        "--collect-atstart=no",  # nothing is counted outside the toggled regions
        # %p: each configuration's forked child writes its own files (dumps.<pid>.<n>)
        f"--callgrind-out-file={dumps}.%p",
        "--dump-instr=no",
        "--dump-line=no",
        "--compress-pos=no",
        "--trace-children=no",
        python,
        "-m",
        "neuronasv.run.instrpass",
        os.path.abspath(suite),
        "--out",
        out_dir,
        "--helper",
        helper,
        "--iterations",
        str(iterations),
        "--jobs",
        str(pass_jobs()),
    ]
    for r in regexes:
        cmd += ["--bench", r]
    return cmd


def pass_jobs() -> int:
    """Configurations the pass counts at once: the CPUs this process may use, at most
    :data:`MAX_JOBS` (each is a valgrind process of its own, forked from the pass's)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_JOBS))


def valgrind_env(env: Mapping[str, str], *, scratch: str | None = None) -> dict[str, str]:
    """The pass's environment: the tree on the path, a fixed hash seed, one thread, and the
    matrix libraries kept off FMA (:data:`neuronasv.measure.callgrind.MATRIX_ISA`).

    ``scratch``: the pass's own folder (removed with it). Importing ``torch._dynamo`` (the
    pass does where a workload's optimizer needs it) makes torch's default cache folder
    (``$TMPDIR/torchinductor_<user>``) although the pass compiles nothing; without a compile
    cache of the run's, that folder goes in ``scratch`` rather than be left behind.
    """
    penv = dict(env)
    if scratch is not None:
        penv.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(scratch, "inductor"))
    penv["PYTHONPATH"] = penv.get("ASV_PYTHONPATH", "")
    penv["PYTHONHASHSEED"] = "0"  # the same dict and set layouts in every process
    penv["OMP_NUM_THREADS"] = "1"
    from neuronasv.measure.callgrind import MATRIX_ISA

    penv.update(MATRIX_ISA)
    return penv


def read_counts(folder: str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The pass's payloads: ``{profile key: counts entry}`` and its meta (versions)."""
    counts: dict[str, dict[str, Any]] = {}
    meta: dict[str, str] = {}
    if not os.path.isdir(folder):
        return counts, meta
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not name.endswith(".json"):
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, ValueError):
            continue
        if name == META_FILE:
            meta = {str(k): str(v) for k, v in doc.items()}
            continue
        workload = str(doc.get("workload", ""))
        for key, entry in (doc.get("results") or {}).items():
            shape, dtype = split_results_key(str(key))
            if isinstance(entry, dict):
                counts[profile_key(workload, shape, dtype)] = entry
    return counts, meta


def catalogue_ops(folder: str) -> dict[str, list[str]]:
    """``{workload: [op and module:<path> names]}`` counted by the pass in ``folder``."""
    table: dict[str, set[str]] = {}
    counts, _ = read_counts(folder)
    for key, entry in counts.items():
        workload = key.split("[", 1)[0]
        names = set(entry.get("ops") or {}) | set(entry.get("modules") or {})
        table.setdefault(workload, set()).update(names)
    return {w: sorted(n) for w, n in table.items() if n}


def _counts(entry: Mapping[str, Any], meta: Mapping[str, str]) -> PassCounts | None:
    if "total" not in entry:
        return None
    return PassCounts(
        total=float(entry["total"]),
        ops={str(k): float(v) for k, v in (entry.get("ops") or {}).items()},
        modules={str(k): float(v) for k, v in (entry.get("modules") or {}).items()},
        deterministic=bool(entry.get("deterministic", True)),
        unstable=tuple(str(u) for u in entry.get("unstable") or ()),
        why={str(k): str(v) for k, v in (entry.get("why") or {}).items()},
        valgrind=meta.get("valgrind", ""),
        torch=meta.get("torch", ""),
    )


def attach_counts(
    profiles: Sequence[WorkloadProfile], folder: str
) -> tuple[list[WorkloadProfile], dict[str, str]]:
    """Each profile with its configuration's counts; failures of the pass by key."""
    counts, meta = read_counts(folder)
    failures = {f"instructions {k}": str(e["error"]) for k, e in counts.items() if "error" in e}
    out = []
    for p in profiles:
        entry = counts.get(p.key)
        found = _counts(entry, meta) if entry else None
        out.append(replace(p, counted=found) if found else p)
    return out, failures


@dataclass(frozen=True)
class CommitPass:
    """What one commit's instructions pass runs, and where it reports.

    Attributes:
        python: the interpreter that runs the suite under valgrind.
        suite: the commit's benchmark suite folder.
        work: the commit's scratch folder (the payloads and dumps go there).
        env: the commit's environment (valgrind's variables are added to a copy).
        regexes: asv ``--bench`` regexes limiting the suite (none: all of it).
        prefix: the commit's progress prefix (its lines are logged after it).
        stream: the runner's subprocess helper (output lines logged, idle timeout).
    """

    python: str
    suite: str
    work: str
    env: Mapping[str, str]
    regexes: Sequence[str]
    prefix: str
    stream: Callable[..., int]


def instructions_pass(run: CommitPass) -> str | None:
    """Run one commit's pass (module doc); the payload folder, None when it did not run.

    Never raises for a failing pass: it says why and the commit goes on.
    """
    python, suite, work, env, regexes = run.python, run.suite, run.work, run.env, run.regexes
    prefix, stream = run.prefix, run.stream
    from neuronasv.errors import BackendUnavailable
    from neuronasv.measure.callgrind import build_helper, valgrind_version

    version = valgrind_version()
    if version is None:
        log.info(f"{prefix} instructions: valgrind is not installed; no instruction series")
        return None
    try:
        helper = build_helper(os.path.join(work, "callgrind-helper"))
    except BackendUnavailable as exc:
        log.info(f"{prefix} instructions: {exc}; no instruction series")
        return None
    out_dir = os.path.join(work, "instructions")
    dumps_dir = os.path.join(work, "callgrind")
    os.makedirs(dumps_dir, exist_ok=True)
    cmd = valgrind_command(
        python,
        suite,
        out_dir=out_dir,
        helper=helper,
        dumps=os.path.join(dumps_dir, "callgrind.out"),
        regexes=regexes,
        valgrind=shutil.which("valgrind") or "valgrind",
    )
    tail: list[str] = []
    try:
        rc = stream(
            cmd,
            cwd=work,
            env=valgrind_env(env, scratch=work),
            prefix=prefix,
            shown=_not_banner,
            idle_timeout=IDLE_TIMEOUT,
            tail=tail,
        )
    except OSError as exc:
        log.info(f"{prefix} instructions: valgrind could not start ({exc})")
        return None
    from neuronasv.run.instrpass import finish_payloads

    # The dumps are read here, at native speed (a stopped pass keeps what it finished).
    finish_payloads(out_dir, os.path.join(dumps_dir, "callgrind.out"))
    shutil.rmtree(dumps_dir, ignore_errors=True)
    if rc != 0:
        last = tail[-1] if tail else ""
        log.info(
            f"{prefix} instructions pass did not complete (exit {rc}){': ' + last if last else ''}"
        )
    return out_dir if os.path.isdir(out_dir) else None


def prepare_commit(run: CommitPass, *, backend: str, cat_path: str, sha: str) -> str | None:
    """One commit's pass and its ops in the catalogue; the folder for ``NEURONASV_INSTR_DIR``.

    Off on accelerators (device time is their metric): says so and returns None.
    """
    from neuronasv.suite.catalogue import load_catalogue, save_catalogue

    prefix = run.prefix
    if not takes(backend, INSTRUCTIONS.name):
        log.info(f"{prefix} instructions: off on {backend} (device time is the metric there)")
        return None
    started = time.monotonic()
    folder = instructions_pass(run)
    if folder is None:
        return None
    found = catalogue_ops(folder)
    before = load_catalogue(cat_path)
    after = before.merge(catalogue_key(backend), found, sha)
    if after != before:
        save_catalogue(cat_path, after)
    counts, _ = read_counts(folder)
    unstable = sorted(k for k, e in counts.items() if e.get("deterministic") is False)
    note = f"; NOT deterministic: {', '.join(unstable)}" if unstable else ""
    log.info(
        f"{prefix} instructions pass done in {time.monotonic() - started:.0f} s:"
        f" {sum('total' in e for e in counts.values())} configuration(s) counted{note}"
    )
    for key in unstable:
        for what, line in sorted((counts[key].get("why") or {}).items()):
            target = "the whole step" if what == "total" else "its ops and modules"
            log.info(f"{prefix} instructions {key}, {target} not deterministic: {line}")
    return folder


def _not_banner(line: str) -> bool:
    """valgrind's own ``==pid==`` banner lines are not progress."""
    return not line.lstrip().startswith("==")
