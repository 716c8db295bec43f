"""``neuronasv run``: the asv suite for the code *as of* each commit, plus a sidecar per result.

For each commit, in order:

1. ``git worktree add --detach`` a temporary tree at that commit (asv's ``existing``
   environment never checks anything out).
2. **Pre-pass** (:mod:`neuronasv.run.prepass`): profile the commit's suite once, in one
   process, with the tree first on the import path; add the ops it found to the machine's
   op catalogue (:mod:`neuronasv.suite.catalogue`, ``<results>/<machine>/`` beside the
   results) *before* asv imports the suite, so a new op has its series from this commit on.
   asv's ``setup_cache`` then reuses these profiles (``NEURONASV_PREPASS_DIR``) instead of
   paying a torch import and device start-up per workload. A commit whose code has no
   pre-pass, or a pre-pass that fails, falls back to asv's own ``setup_cache`` profiling.
3. Write a private asv config: the tree's ``asv.conf.json`` (or the checkout's) with
   ``benchmark_dir`` pointing into the tree and ``repo`` / ``results_dir`` / ``html_dir``
   pointing at the checkout's folders (absolute), environment ``existing``.
4. Run ``asv run --set-commit-hash <sha> --record-samples --machine <name>`` with
   ``ASV_PYTHONPATH=<tree>`` (asv drops ``PYTHONPATH`` and passes ``ASV_PYTHONPATH`` on), so
   the benchmark processes import the tree's ``neuronasv`` and suite, not the installed
   editable copy. asv's progress lines are streamed with a ``[i/N sha8]`` prefix; Kineto's
   per-cycle stderr chatter is dropped.
5. Write the sidecar (``model.RunSidecar``) next to asv's results file: environment
   fingerprint, every profile's full op table (written by the suite's ``setup_cache`` into
   ``NEURONASV_PROFILE_OUT``), the map from every asv (benchmark, params) to
   ``SeriesId(workload, shape, dtype, op)``, traces and failures; merge the profiles' ops
   into the catalogue again (covers workloads profiled by asv's ``setup_cache``).

A failing benchmark (or a whole failing commit) does not stop the others: asv keeps the
results of the benchmarks that ran, and the remaining commits still run. Commits that
produced no results file at all are reported together at the end (:class:`StoreError`).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from neuronasv import env as suite_env
from neuronasv.errors import CorruptResultsError, StoreError, UsageError
from neuronasv.fileio import write_atomic
from neuronasv.keys import profile_key
from neuronasv.metrics import CALLGRIND_PASS, MEMORY, counted_by
from neuronasv.model import RunSidecar
from neuronasv.model.sidecar import RunState
from neuronasv.proc import stream_process
from neuronasv.run.benchsel import check_bench
from neuronasv.run.outputs import build_series, read_profiles
from neuronasv.run.records import grow_catalogue, prepare_catalogue, prepare_peaks
from neuronasv.run.scratch import prune_stale, scratch_dir
from neuronasv.run.usersuite import suite_root, with_root_on_path
from neuronasv.store.asvconf import (
    CONFIG_NAME,
    DEFAULT_HTML_DIR,
    DEFAULT_RESULTS_DIR,
    DEFAULT_TRACES_DIR,
    config_dir,
    read_asv_config,
    repo_config,
    traces_dir_for,
)
from neuronasv.store.asvresults import AsvResultsReader
from neuronasv.store.git import Git
from neuronasv.store.layout import (
    BENCHMARKS_FILE,
    peaks_file,
    result_files_of_commit,
    sidecar_path,
)
from neuronasv.store.layout import trace_dir as commit_trace_dir
from neuronasv.store.machine import (
    MACHINE_FILE_NAME,
    check_machine_name,
    machine_info,
    save_machine,
)
from neuronasv.suite.catalogue import catalogue_path

__all__ = [
    "DEFAULT_RESULTS_DIR",
    "DEFAULT_TRACES_DIR",
    "CommitRun",
    "RunOptions",
    "asv_command",
    "build_series",
    "compile_cache_env",
    "is_noise",
    "read_profiles",
    "require_suite",
    "run_commits",
    "run_dirs",
    "suite_dir",
]

log = logging.getLogger(__name__)

#: A pre-pass that prints nothing for this long is stopped (asv's setup_cache timeout:
#: each workload prints a line when done, and a torch.compile of every shape fits).
PREPASS_IDLE_TIMEOUT = 1800.0

# Kineto writes these from C++ to fd 2 once per profiler cycle; they are not errors.
_NOISE_RE = re.compile(
    r"(USDT:.*profiler_(start|stop)\b|STAGE:.*ActivityProfilerController|"
    r"\[W[0-9 :.]*CPUAllocator|Profiler clears events at the end of each cycle|^\s*_warn_once\()"
)

Clock = Callable[[], _dt.datetime]


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def is_noise(line: str) -> bool:
    """True for profiler chatter that must not reach users' output."""
    return bool(_NOISE_RE.search(line))


@dataclass(frozen=True)
class RunOptions:
    """What ``neuronasv run`` does.

    Attributes:
        repo: the git checkout (its top level); results and traces go under it by default.
        commits: revisions to benchmark, in order (default ``HEAD``).
        machine: asv machine name (default: the host name, as asv does).
        results_dir: asv results folder (default: the config's ``results_dir``,
            ``.asv/results``).
        traces_dir: trace store (default ``.asv/traces``), used with ``keep_traces``.
        bench: asv ``--bench`` regular expression.
        quick: asv ``--quick`` and a minimal profile (a smoke test, not a measurement).
        keep_traces: keep profiler traces at ``<traces_dir>/<machine>/<hash8>/`` (default:
            one gzipped chrome trace per workload, from the last profiled cycle; Neuron
            adds its trace folder with the NEFF/NTFF files).
        backend: measure backend (``auto``, ``cpu``, ``cuda``, ``neuron``).
        python: interpreter for asv and the benchmarks (the ``existing`` environment).
        extra_env: extra environment variables for asv and the benchmark processes.
        prepass: profile each commit once before asv (op discovery for the catalogue, and
            one process for the whole suite); False = asv's ``setup_cache`` profiles each
            workload in its own process and the catalogue grows only after each run.
        compile_cache: folder for torch.compile's caches, shared by the pre-pass and asv's
            processes (:func:`compile_cache_env`); None = torch's defaults.
        metrics: ``devtime`` always; a metric whose registry entry's ``run_pass`` is
            the callgrind pass adds that pass (CPU only, :mod:`neuronasv.run.instrrun`) and
            its ``instr_`` series. None: the default for the backend
            (:func:`neuronasv.run.instrrun.default_metrics`: the callgrind pass's metrics
            on the CPU where valgrind is usable).
    """

    repo: str
    commits: tuple[str, ...] = ("HEAD",)
    machine: str | None = None
    results_dir: str | None = None
    traces_dir: str | None = None
    bench: str | None = None
    quick: bool = False
    keep_traces: bool = True
    backend: str = "auto"
    python: str = field(default_factory=lambda: canonical_python(sys.executable))
    extra_env: Mapping[str, str] = field(default_factory=dict)
    prepass: bool = True
    compile_cache: str | None = None
    metrics: tuple[str, ...] | None = None


def canonical_python(path: str) -> str:
    """``<dir>/python`` when ``path`` (``<dir>/python3``, ``<dir>/python3.11``) is the same
    interpreter, else ``path``.

    asv names a results file after its ``existing:<python>`` environment
    (``<commit>-existing-py_..._bin_python3.json``), and a venv answers to ``python``,
    ``python3`` and ``python3.11`` alike: without one name, the same machine's results of
    one commit would land in two files by how the command was started (its console
    script's ``#!`` line is whatever pip was run as). Symbolic links are not resolved:
    the venv's interpreter is the venv only by its own path.
    """
    folder, name = os.path.split(path)
    if name == "python" or not name.startswith("python"):
        return path
    plain = os.path.join(folder, "python")
    try:
        return plain if os.path.samefile(plain, path) else path
    except OSError:
        return path


@dataclass(frozen=True)
class CommitRun:
    """Outcome of one commit."""

    commit: str
    result_file: str | None
    sidecar_file: str | None
    series: int = 0
    failures: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.result_file is not None


def asv_command(opts: RunOptions, conf_path: str, sha: str, machine: str) -> list[str]:
    """The ``asv run`` command line for one commit."""
    cmd = [
        opts.python, "-m", "asv", "run",
        "--config", conf_path,
        "--set-commit-hash", sha,
        "--record-samples",
        "--machine", machine,
        "-E", f"existing:{opts.python}",
        "--show-stderr",
    ]  # fmt: skip
    if opts.quick:
        cmd.append("--quick")
    if opts.bench:
        cmd += ["--bench", opts.bench]
    return cmd


def _stream(
    cmd: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    prefix: str,
    idle_timeout: float | None = None,
    tail: list[str] | None = None,
    shown: Callable[[str], bool] | None = None,
) -> int:
    """Run ``cmd``, logging its output lines (INFO, after ``prefix``); its exit status.

    ``shown`` picks the lines worth logging (default: all but blank lines and Kineto's
    noise); every kept line goes to ``tail``.

    With ``idle_timeout``, a process that prints nothing for that long is killed with its
    whole process group (the status is then negative). ``tail`` receives the last output
    lines. A Ctrl-C kills the process group too (:mod:`neuronasv.proc`).
    """

    def on_line(line: str) -> None:
        if line.strip() and not is_noise(line):
            if shown is None or shown(line):
                log.info("%s %s", prefix, line.rstrip())
            if tail is not None:
                tail.append(line.rstrip())
                del tail[:-5]

    return stream_process(cmd, on_line=on_line, cwd=cwd, env=env, idle_timeout=idle_timeout)


def _find_result(results_dir: str, machine: str, sha: str, since: float) -> str | None:
    found = [
        p
        for p in result_files_of_commit(results_dir, machine, sha)
        if os.path.getmtime(p) >= since - 1
    ]
    return max(found, key=os.path.getmtime) if found else None


def _under(repo: str, value: str | None) -> str | None:
    """A path option relative to the checkout (None stays None)."""
    return value if not value or os.path.isabs(value) else os.path.join(repo, value)


def run_dirs(
    repo: str, opts: RunOptions, conf: Mapping[str, Any] | None = None
) -> tuple[str, str, str]:
    """Absolute (results, html, traces) folders of a run in checkout ``repo``.

    The results folder follows the same rule as every reader
    (:func:`neuronasv.store.asvconf.results_dir_for`): ``--results-dir``, else the
    config's ``results_dir``, else ``.asv/results``.
    """
    base = repo_config(repo) if conf is None else conf
    results = config_dir(repo, "results_dir", DEFAULT_RESULTS_DIR, conf=base,
                         override=_under(repo, opts.results_dir))  # fmt: skip
    html = config_dir(repo, "html_dir", DEFAULT_HTML_DIR, conf=base)
    traces = _under(repo, opts.traces_dir) or traces_dir_for(repo, _under(repo, opts.results_dir))
    return os.path.abspath(results), os.path.abspath(html), os.path.abspath(traces)


@dataclass(frozen=True)
class _Shared:
    """What every commit of one run shares."""

    opts: RunOptions
    repo: str
    machine: str
    backend_name: str
    fingerprint: Mapping[str, str]
    base_conf: Mapping[str, Any]
    results_dir: str
    html_dir: str
    traces_root: str
    cat_path: str
    home: str


def run_commits(
    opts: RunOptions,
    *,
    git: Git | None = None,
    clock: Clock = _utcnow,
    fingerprint: Mapping[str, str] | None = None,
) -> list[CommitRun]:
    """Benchmark every commit of ``opts``; see the module docstring.

    Everything but the results, sidecars, traces and op catalogue goes into one scratch
    folder of this run (:func:`neuronasv.run.scratch.scratch_dir`), removed at the end
    whatever happens: the worktrees, the private asv config and asv's machine file (asv
    runs with ``HOME`` pointing there, so ``~/.asv-machine.json`` is never written).
    Worktrees and scratch folders a killed run left are pruned first.

    Args:
        opts: what to run.
        git: the git gateway (injected in tests; default ``Git(opts.repo)``).
        clock: time source for the sidecars' ``created``.
        fingerprint: environment fingerprint; collected from the backend when None.

    Raises:
        UsageError: an unsafe machine name, a checkout without an asv suite, or a
            ``--bench`` that is not a regular expression or matches no benchmark of the
            suite (before anything runs).
        StoreError: a revision is not a commit (before anything runs), or at the end when
            some commits produced no asv results file (the others are kept).
    """
    if opts.machine is not None:
        check_machine_name(opts.machine)  # before anything runs or is written
    gw = git or Git(opts.repo)
    repo = os.path.abspath(gw.toplevel())
    gw = gw.at(repo)
    require_suite(repo)  # before a revision is resolved or anything is written
    shas = [gw.rev_parse(c) for c in (opts.commits or ("HEAD",))]
    base_conf = repo_config(repo)
    results_dir, html_dir, traces_root = run_dirs(repo, opts, base_conf)
    check_bench(opts.bench, suite_dir(repo, base_conf), python=opts.python)

    if fingerprint is None:
        from neuronasv.measure.backends import get_backend
        from neuronasv.measure.fingerprint import collect_fingerprint

        backend = get_backend(opts.backend)
        backend_name = backend.name
        fingerprint = collect_fingerprint(backend)
    else:
        backend_name = fingerprint.get("backend", opts.backend)
    from neuronasv.run.instrrun import default_metrics

    opts = replace(opts, metrics=default_metrics(backend_name, opts.metrics))
    info = machine_info(opts.machine, fingerprint)
    machine = info["machine"]
    prune_stale(gw)
    with scratch_dir("run") as scratch:
        home = os.path.join(scratch, "home")
        os.mkdir(home)
        save_machine(info, os.path.join(home, MACHINE_FILE_NAME))
        log.info(
            f"machine {machine}: {info['cpu']}, {info['num_cpu']} CPUs, {info['arch']},"
            f" {info['os']}; backend {backend_name}; results in {results_dir}"
        )
        cat_path = catalogue_path(results_dir, machine)
        prepare_catalogue(cat_path, backend_name)
        prepare_peaks(peaks_file(results_dir, machine), backend_name)
        shared = _Shared(
            opts, repo, machine, backend_name, fingerprint, base_conf, results_dir, html_dir,
            traces_root, cat_path, home,
        )  # fmt: skip
        outcomes = [
            _run_logged(shared, sha, f"[{i}/{len(shas)} {sha[:8]}]", scratch, gw, clock)
            for i, sha in enumerate(shas, 1)
        ]
    missing = [o for o in outcomes if not o.ok]
    if missing:
        raise StoreError(
            f"{len(missing)} of {len(outcomes)} commits produced no asv results: "
            + "; ".join(f"{o.commit[:8]} ({o.error})" for o in missing),
            hint="the other commits' results are kept; rerun with the failing commit alone",
        )
    return outcomes


def _run_logged(
    shared: _Shared,
    sha: str,
    prefix: str,
    scratch: str,
    git: Git,
    clock: Clock,
) -> CommitRun:
    log.info(f"{prefix} commit {sha[:8]} {git.subject(sha)}".rstrip())
    outcome = _run_one(shared, sha, prefix, scratch, git, clock)
    if outcome.ok:
        note = f", {len(outcome.failures)} failed" if outcome.failures else ""
        log.info(f"{prefix} done: {outcome.series} series{note} -> {outcome.result_file}")
    else:
        log.info(f"{prefix} no results: {outcome.error}")
    return outcome


def require_suite(repo: str) -> None:
    """Refuse, in one line, a checkout that has no asv suite to run (``init`` not run yet).

    Commits that predate the suite are measured with the checkout's (asv's way), so the
    checkout must hold one: its ``asv.conf.json`` and the ``benchmark_dir`` it names.

    Raises:
        UsageError: no ``asv.conf.json``, or its suite folder is missing.
    """
    if not os.path.isfile(os.path.join(repo, CONFIG_NAME)):
        raise UsageError(
            f"no asv suite in {repo} (no {CONFIG_NAME}): run `neuronasv init` there first"
            " (docs/getting-started.md); nothing was run or written"
        )
    suite = suite_dir(repo, repo_config(repo))
    if not os.path.isdir(suite):
        raise UsageError(
            f"no asv suite in {repo}: {CONFIG_NAME} names benchmark_dir"
            f" {os.path.relpath(suite, repo)!r}, which does not exist (`neuronasv init` writes"
            " one); nothing was run or written"
        )


#: asv's forkserver listens on ``<temp>/asv-forkserver-<8 characters>/socket``.
_FORKSERVER_SOCKET = len("/asv-forkserver-") + 8 + len("/socket")
#: The longest Unix socket path: 108 bytes with the NUL on Linux, 104 on macOS.
SOCKET_PATH_MAX = 103


def launch_method(tempdir: str) -> str:
    """asv's launch method for a run whose temporary folder is ``tempdir``: ``forkserver``
    (one process imports the suite and forks a child per benchmark), unless its socket's path
    would be too long for a Unix socket — then asv's server dies at start ("Failed to start
    server thread") — and ``spawn``."""
    fits = len(os.fsencode(tempdir)) + _FORKSERVER_SOCKET <= SOCKET_PATH_MAX
    return "forkserver" if fits else "spawn"


def suite_dir(repo: str, conf: Mapping[str, Any]) -> str:
    """The checkout's asv suite folder (the config's ``benchmark_dir``, else ``benchmarks``)."""
    return os.path.join(repo, str(conf.get("benchmark_dir", "benchmarks")))


def _commit_conf(
    shared: _Shared, tree: str, work: str, prefix: str
) -> tuple[str, str]:
    """Write the commit's private asv config into ``work``; (config path, suite folder)."""
    conf_file = os.path.join(tree, CONFIG_NAME)
    conf = dict(read_asv_config(conf_file) if os.path.isfile(conf_file) else shared.base_conf)
    suite = os.path.join(tree, "benchmarks")
    if not os.path.isdir(suite):
        # Older commits predate the suite: measure their code with today's suite, as
        # asv itself does for every commit.
        suite = suite_dir(shared.repo, shared.base_conf)
        log.info(f"{prefix} this commit has no benchmarks/; using the checkout's suite")
    else:
        suite = suite_dir(tree, conf)
    conf.update(
        version=1,
        project=str(conf.get("project", "neuronasv")),
        repo=shared.repo,
        dvcs="git",
        environment_type="existing",
        benchmark_dir=os.path.abspath(suite),
        results_dir=shared.results_dir,
        html_dir=shared.html_dir,
        env_dir=os.path.join(work, "env"),
    )
    conf.setdefault("branches", ["main"])
    # One process imports the suite and forks one child per benchmark parameter, instead of
    # a new interpreter per parameter (asv's "spawn"): the per-series cost of the suite
    # (docs/asv.md). A launch method the repository's config names is kept.
    if "launch_method" not in conf:
        conf["launch_method"] = launch_method(tempfile.gettempdir())
        if conf["launch_method"] != "forkserver":
            log.info(f"temporary folder {tempfile.gettempdir()!r} too long for asv's forkserver"
                     " socket: one process per benchmark (asv's spawn), slower")  # fmt: skip
    conf.pop("matrix", None)
    conf_path = os.path.join(work, CONFIG_NAME)
    with open(conf_path, "w", encoding="utf-8") as fh:
        json.dump(conf, fh, indent=2)
    return conf_path, suite


def _commit_env(shared: _Shared, tree: str, sha: str, profile_out: str) -> dict[str, str]:
    """The environment of the commit's pre-pass and asv run (asv's HOME is set apart)."""
    opts = shared.opts
    env = dict(os.environ)
    env.update(opts.extra_env)
    pypath = [tree] + [p for p in env.get("ASV_PYTHONPATH", "").split(os.pathsep) if p]
    if suite_root(tree, shared.repo) != tree:
        pypath.append(shared.repo)  # today's suite for old code: its workloads module too
    env["ASV_PYTHONPATH"] = os.pathsep.join(pypath)
    env[suite_env.BACKEND.name] = shared.backend_name
    env[suite_env.PROFILE_OUT.name] = profile_out
    env.pop(suite_env.TRACE_DIR.name, None)
    if opts.keep_traces:
        env[suite_env.TRACE_DIR.name] = commit_trace_dir(shared.traces_root, shared.machine, sha)
    if opts.quick:
        env[suite_env.QUICK.name] = "1"
    env[suite_env.OPS_CATALOGUE.name] = shared.cat_path
    env.pop(suite_env.MEMORY.name, None)
    if MEMORY.name in (opts.metrics or ()):  # the alloc_ series (neuronasv.measure.memory)
        env[suite_env.MEMORY.name] = "1"
    env[suite_env.PEAK_FILE.name] = os.path.abspath(peaks_file(shared.results_dir, shared.machine))
    env.pop(suite_env.PREPASS_DIR.name, None)
    env.update(compile_cache_env(opts.compile_cache))
    return env


def compile_cache_env(folder: str | None) -> dict[str, str]:
    """torch.compile's cache variables for ``folder`` (none when None: torch's defaults).

    Inductor's compiled kernels (``TORCHINDUCTOR_CACHE_DIR``, with its FX graph cache) and
    Triton's (``TRITON_CACHE_DIR``) both live there, so the pre-pass compiles a workload
    once and asv's processes, the next commit and the next CI run (a workflow caches the
    folder) load it.
    """
    if not folder:
        return {}
    root = os.path.abspath(folder)
    return {
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(root, "inductor"),
        "TRITON_CACHE_DIR": os.path.join(root, "triton"),
    }


def _run_one(
    shared: _Shared,
    sha: str,
    prefix: str,
    scratch: str,
    git: Git,
    clock: Clock,
) -> CommitRun:
    opts = shared.opts
    with (
        tempfile.TemporaryDirectory(prefix=f"{sha[:8]}-", dir=scratch) as work,
        git.detached_worktree(sha, parent=work) as tree,
    ):
        conf_path, suite = _commit_conf(shared, tree, work, prefix)
        profile_out = os.path.join(work, "profiles")
        env = _commit_env(shared, tree, sha, profile_out)

        started = time.time()
        from neuronasv.measure.device_state import host_reading

        at_start = host_reading()  # the runner's load and clock, beside the run (sidecar)
        if opts.prepass:
            prepass_dir = os.path.join(work, "prepass")
            if _prepass(opts, suite, prepass_dir, env=env, cwd=work, prefix=prefix, tree=tree):
                env[suite_env.PREPASS_DIR.name] = prepass_dir
            # Before asv imports the suite: ops first seen in this commit get their series.
            profiles = read_profiles(profile_out)[0]
            grow_catalogue(shared.cat_path, shared.backend_name, profiles, sha, prefix)
        # asv keeps its machine file in ~/.asv-machine.json: a private HOME for asv only;
        # the suite's plugin gives benchmark processes the user's HOME back.
        env[suite_env.USER_HOME.name] = env.get("HOME", "")
        env["HOME"] = shared.home
        env.pop(suite_env.INSTR_DIR.name, None)
        instr_dir = _callgrind_pass(shared, suite, work, env, sha, prefix)
        if instr_dir is not None:
            env[suite_env.INSTR_DIR.name] = instr_dir
        try:
            rc = _stream(
                asv_command(opts, conf_path, sha, shared.machine),
                cwd=work,
                env=env,
                prefix=prefix,
            )
        except OSError as exc:
            return CommitRun(sha, None, None, error=f"cannot run asv: {exc}")
        result_file = _find_result(shared.results_dir, shared.machine, sha, started)
        # Profiles asv's setup_cache took (no or partial pre-pass): next commits get them.
        profiles = read_profiles(profile_out)[0]
        grow_catalogue(shared.cat_path, shared.backend_name, profiles, sha, prefix)
        if result_file is None:
            return CommitRun(sha, None, None, error=f"asv exited with {rc} and wrote no results")
        sidecar, failures = _write_sidecar(
            result_file, shared, sha=sha, profile_out=profile_out, clock=clock,
            instr_dir=instr_dir, state=RunState(start=at_start, end=host_reading()),
        )  # fmt: skip
        return CommitRun(
            sha,
            result_file,
            sidecar_path(result_file),
            series=len(sidecar.series),
            failures=failures,
        )


def _callgrind_pass(
    shared: _Shared,
    suite: str,
    work: str,
    env: Mapping[str, str],
    sha: str,
    prefix: str,
) -> str | None:
    """The commit's callgrind pass when ``--metrics`` names a metric it counts (instrrun)."""
    opts = shared.opts
    if not {m.name for m in counted_by(CALLGRIND_PASS)} & set(opts.metrics or ()):
        return None
    from neuronasv.run.instrrun import CommitPass, prepare_commit

    run = CommitPass(
        python=opts.python, suite=suite, work=work, env=env,
        regexes=[opts.bench] if opts.bench else [], prefix=prefix, stream=_stream,
    )  # fmt: skip
    return prepare_commit(run, backend=shared.backend_name, cat_path=shared.cat_path, sha=sha)


def _prepass(
    opts: RunOptions,
    suite: str,
    out_dir: str,
    *,
    env: Mapping[str, str],
    cwd: str,
    prefix: str,
    tree: str = "",
) -> bool:
    """Run the commit's pre-pass (see module docstring); False when it did not complete."""
    penv = dict(env)
    for entry in reversed(penv.get("ASV_PYTHONPATH", "").split(os.pathsep)):
        if entry:  # the worktree first, the caller's PYTHONPATH kept (run/usersuite.py)
            penv = with_root_on_path(entry, penv)
    cmd = [opts.python, "-m", prepass_module(tree), os.path.abspath(suite), "--out", out_dir]
    if opts.bench:
        cmd += ["--bench", opts.bench]
    tail: list[str] = []
    started = time.monotonic()
    try:
        rc = _stream(
            cmd, cwd=cwd, env=penv, prefix=prefix,
            idle_timeout=PREPASS_IDLE_TIMEOUT, tail=tail,
        )  # fmt: skip
    except OSError as exc:
        log.info(f"{prefix} pre-pass could not start ({exc}); asv profiles each workload")
        return False
    if rc != 0:
        why = "stopped: no output for too long" if rc < 0 else f"exit {rc}"
        last = tail[-1] if tail else ""
        log.info(
            f"{prefix} pre-pass did not complete ({why}{': ' + last if last else ''});"
            " asv's setup_cache profiles the workloads it did not deliver"
        )
    else:
        log.info(f"{prefix} pre-pass done in {time.monotonic() - started:.0f} s")
    # Partial payloads are still used: setup_cache profiles only what is missing.
    return os.path.isdir(out_dir)


def prepass_module(tree: str) -> str:
    """The pre-pass module of the code at ``tree``: the tree's own ``neuronasv`` comes first
    on the import path, and commits before the run stage had it in ``store``."""
    old = os.path.join(tree, "neuronasv", "store", "prepass.py")
    new = os.path.join(tree, "neuronasv", "run", "prepass.py")
    if tree and os.path.isfile(old) and not os.path.isfile(new):
        return "neuronasv.store.prepass"
    return "neuronasv.run.prepass"


def _write_sidecar(
    result_file: str,
    shared: _Shared,
    *,
    sha: str,
    profile_out: str,
    clock: Clock,
    instr_dir: str | None = None,
    state: RunState | None = None,
) -> tuple[RunSidecar, dict[str, str]]:
    """The commit's sidecar next to asv's ``result_file``: its series, profiles (with their
    callgrind pass's counts from ``instr_dir``), kept traces, failures and the machine's
    ``state`` at the run's start and end."""
    results_dir, machine, fingerprint = shared.results_dir, shared.machine, shared.fingerprint
    traces_root = shared.traces_root if shared.opts.keep_traces else None
    trace_dir = commit_trace_dir(shared.traces_root, shared.machine, sha)
    try:
        _raw, results, marked = AsvResultsReader().read_json(result_file)
    except OSError as exc:
        raise CorruptResultsError(f"{result_file}: unreadable asv results: {exc}") from exc
    bench_file = os.path.join(results_dir, BENCHMARKS_FILE)
    try:
        with open(bench_file, encoding="utf-8") as fh:
            benchmarks = json.load(fh)
    except (OSError, ValueError):
        benchmarks = {}
    series, failed = build_series(results, benchmarks, result_file, marked)
    profiles, failures = read_profiles(profile_out)
    if instr_dir is not None:
        from neuronasv.run.instrrun import attach_counts

        profiles, instr_failures = attach_counts(profiles, instr_dir)
        failures.update(instr_failures)
    # A failed series explained by its profile's failure is not listed twice.
    explained = {
        s.benchmark + "(" + ", ".join(s.params) + ")"
        for s in series
        if s.workload and profile_key(*s.config) in failures
    }
    failures.update({k: v for k, v in failed.items() if k not in explained})
    traces: dict[str, str] = {}
    if traces_root is not None:
        for p in profiles:
            if p.trace_files:
                path = os.path.join(trace_dir, p.trace_files[0])
                traces[p.key] = os.path.relpath(path, traces_root)
    sidecar = RunSidecar(
        machine=machine,
        commit_hash=sha,
        env_name=str(results.get("env_name", "")),
        fingerprint=dict(fingerprint),
        profiles=tuple(profiles),
        series=tuple(series),
        traces=traces,
        failures=failures,
        created=clock().isoformat(timespec="seconds"),
        state=state,
    )
    write_atomic(sidecar_path(result_file), sidecar.dumps())
    return sidecar, failures
