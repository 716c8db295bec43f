"""The first five minutes: the whole service, end to end, on this machine's accelerator.

The backend is ``auto`` (Neuron, then CUDA, then the CPU): on an accelerator host the demo
measures the accelerator, with the suite's accelerator shapes (the suite adds them for any
backend but the CPU), on the asv machine ``demo-<backend>``; on a CPU-only host it is the
CPU demo, unchanged (``--backend cpu`` forces that anywhere).

``neuronasv demo`` plays what the per-commit and PR workflows do, locally:

1. clone the current checkout (HEAD) into a scratch folder, so the user's repo is untouched;
2. commit the shipped example change (``examples/regress-rmsnorm-eps.patch``: a well-meant
   "keep eps on the device" edit to the naive RMSNorm that materialises eps as a full
   tensor, so ``aten::add`` and ``aten::rsqrt`` run over every element instead of one per
   row — the seed's epsilon add, made expensive);
3. ``neuronasv run BASE HEAD`` — the asv suite at both commits, samples and sidecars;
4. ``neuronasv compare BASE HEAD`` — verdicts with op attribution (findings JSON + text);
5. ``neuronasv confirm`` — re-measure the suspected regressions base/head interleaved in
   rounds, as the PR workflow does, so run-to-run noise cannot pass for a regression;
6. ``neuronasv comment --dry-run`` — the PR comment as it would be sent;
7. ``neuronasv regressions --report`` — change points over the (short) history (two
   commits: too few, and it says so) and the newest commit against its parent, taken from
   step 5's document so the site shows the comment's confirmed regressions;
8. ``neuronasv publish`` — the static history site;

then prints where to look and the one-sentence verdict that names the op. Each step calls
the package's API (:mod:`neuronasv.api`: the step functions the commands call, in this
process) and prints, shell-quoted, the command line that does the same, so a user can
replay any of them by hand; ``tests/test_demo.py`` parses each printed line with the
command's own parser and checks it gives the very options the demo passed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TextIO

from neuronasv import env
from neuronasv.errors import NeuronasvError, UsageError
from neuronasv.fileio import write_atomic
from neuronasv.log import emit
from neuronasv.measure.backends import is_accelerator
from neuronasv.model import FindingsDocument
from neuronasv.store.asvconf import repo_config
from neuronasv.store.git import Git

if TYPE_CHECKING:
    from neuronasv.api import (
        Commented,
        CommentOptions,
        CompareOptions,
        Confirmed,
        ConfirmOptions,
        Published,
        PublishOptions,
        RegressionsOptions,
        RunOptions,
        RunSummary,
    )

__all__ = [
    "DEFAULT_BENCH",
    "DEFAULT_PATCH",
    "DEMO_BRANCH",
    "MARKER",
    "DemoOptions",
    "DemoOutcome",
    "DemoPaths",
    "DemoSteps",
    "asv_command",
    "check_out_folder",
    "run_demo",
    "verdict_sentence",
    "write_asv_config",
]

DEFAULT_PATCH = os.path.join("examples", "regress-rmsnorm-eps.patch")
# The naive and fused RMSNorm: the change is in the naive one and the fused one is the
# control. The compiled variant is left out by default because every confirmation round
# compiles it again in a fresh process (10-25 s each here); ``--bench rmsnorm`` adds it.
DEFAULT_BENCH = r"rmsnorm\.(Naive|Fused)\."
_DEMO_MACHINE = "demo-{backend}"
# The demo's head commit goes on this branch of the scratch clone (asv publish lists only
# commits on the configured branches; a detached HEAD would be left out).
DEMO_BRANCH = "neuronasv-demo"
# Written into ``out`` when the demo creates it: only a folder carrying it is ever deleted
# (``--fresh``) or written into again.
MARKER = ".neuronasv-demo"
# What the demo itself puts in ``out`` (a folder holding only these, from a version
# before the marker, is recognised as the demo's too).
_OWN_NAMES = frozenset(
    {
        MARKER, "repo", "results", "findings.json", "findings-confirmed.json", "compare.txt",
        "comment.md", "comment-requests.json", "regressions.json", "site", "asv.conf.json",
        "asv-html", ".asv-env",
    }
)  # fmt: skip
# Fixed identity (and a date derived from the base, see run_demo): the demo commit has the
# same hash on every machine for a given base, so reruns reuse results instead of piling
# up commits.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "neuronasv demo",
    "GIT_AUTHOR_EMAIL": "demo@neuronasv.invalid",
    "GIT_COMMITTER_NAME": "neuronasv demo",
    "GIT_COMMITTER_EMAIL": "demo@neuronasv.invalid",
}


@dataclass(frozen=True)
class DemoPaths:
    """Where the demo writes (all under ``out``)."""

    out: str

    @property
    def repo(self) -> str:
        return os.path.join(self.out, "repo")

    @property
    def results(self) -> str:
        return os.path.join(self.out, "results")

    @property
    def findings(self) -> str:
        return os.path.join(self.out, "findings.json")

    @property
    def confirmed(self) -> str:
        return os.path.join(self.out, "findings-confirmed.json")

    @property
    def compare_text(self) -> str:
        return os.path.join(self.out, "compare.txt")

    @property
    def comment(self) -> str:
        return os.path.join(self.out, "comment.md")

    @property
    def requests(self) -> str:
        return os.path.join(self.out, "comment-requests.json")

    @property
    def regressions(self) -> str:
        return os.path.join(self.out, "regressions.json")

    @property
    def site(self) -> str:
        return os.path.join(self.out, "site")

    @property
    def asv_config(self) -> str:
        """An asv config for the demo's results (absolute paths: works from any folder)."""
        return os.path.join(self.out, "asv.conf.json")

    @property
    def asv_html(self) -> str:
        return os.path.join(self.out, "asv-html")


@dataclass(frozen=True)
class DemoOutcome:
    """What the demo produced: the paths, the two commits and the verdict sentence."""

    paths: DemoPaths
    base: str
    head: str
    verdict: str
    regressions: int
    seconds: float


def _git(repo: str, *args: str, env_extra: dict[str, str] | None = None) -> str:
    """``git <args>`` in ``repo`` with the demo's identity (StoreError naming git's reason)."""
    return Git(repo, env={**_GIT_ENV, **(env_extra or {})}).text(*args)


def check_out_folder(out: str, source_repo: str) -> bool:
    """Whether ``out`` is the demo's own folder; :class:`UsageError` when it is not usable.

    Usable: absent, empty, or holding the demo's marker (or, from a version before the
    marker, only names the demo writes). Never a folder that holds the checkout being
    demoed. Returns True only when ``out`` carries the marker: the one case ``--fresh``
    may delete it.
    """
    real_out = os.path.realpath(out)
    real_src = os.path.realpath(source_repo)
    if os.path.commonpath([real_out, real_src]) == real_out:
        raise UsageError(
            f"--out {out} holds the checkout {source_repo}: the demo needs a scratch folder"
            " of its own",
            hint="use the default (out/demo) or another new folder",
        )
    if not os.path.exists(out):
        return False
    if not os.path.isdir(out):
        raise UsageError(f"--out {out} exists and is not a folder")
    names = set(os.listdir(out))
    if not names:
        return False
    if MARKER in names:
        return True
    if names <= _OWN_NAMES:
        return False  # an older demo's layout: reused, never deleted without the marker
    foreign = sorted(names - _OWN_NAMES)
    raise UsageError(
        f"--out {out} holds files the demo did not create ({', '.join(foreign[:5])}"
        + (" ..." if len(foreign) > 5 else "")
        + "); refusing to write into it or delete it",
        hint="use the default (out/demo) or a new folder",
    )


def asv_command() -> str:
    """How to call asv from here: the one next to this interpreter when there is one."""
    return _beside("asv")


def neuronasv_command() -> str:
    """How to call neuronasv so a printed line replays as it is: the bare name when the one
    on PATH is this interpreter's, else the script next to the interpreter (``.venv``
    not activated: ``.venv/bin/neuronasv``)."""
    return _beside("neuronasv")


def _beside(name: str) -> str:
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if not os.access(beside, os.X_OK):
        return name
    found = shutil.which(name)
    if found and os.path.realpath(found) == os.path.realpath(beside):
        return name
    rel = os.path.relpath(beside)
    return rel if not rel.startswith("..") else beside


def write_asv_config(paths: DemoPaths) -> None:
    """An asv config over the demo's clone and results, so plain asv works on them."""
    conf = {
        "version": 1,
        "project": "neuronasv-demo",
        "repo": paths.repo,
        "dvcs": "git",
        "branches": [DEMO_BRANCH],
        "environment_type": "existing",
        "benchmark_dir": os.path.join(paths.repo, "benchmarks"),
        "results_dir": paths.results,
        "html_dir": paths.asv_html,
        "env_dir": os.path.join(paths.out, ".asv-env"),
    }
    with open(paths.asv_config, "w", encoding="utf-8") as fh:
        json.dump(conf, fh, indent=2)
        fh.write("\n")


def _ensure_config_branches(repo: str, base: str) -> None:
    """Create (at ``base``) the branches the clone's asv.conf.json names but it lacks.

    A clone of a checkout on another branch (a worktree, a feature branch) has no local
    ``main``, and ``asv run`` refuses a config whose branches do not exist. It is the
    demo's scratch clone, so adding the branch there changes nothing of the user's.
    """
    try:
        branches = repo_config(repo).get("branches") or ["main"]
    except NeuronasvError:
        branches = ["main"]
    for b in branches:
        if isinstance(b, str) and b and not _git_ok(repo, "rev-parse", "--verify", "--quiet",
                                                    f"refs/heads/{b}"):
            _git(repo, "branch", b, base)


def _git_ok(repo: str, *args: str) -> bool:
    return Git(repo).ok(*args)


def verdict_sentence(doc: FindingsDocument) -> str:
    """One sentence for the end of the demo: the worst cause, what changed, confirmed or not.

    ``Fails (gate: more work, time undecided, 4 rows): rmsnorm.naive — more work in 6/6
    configurations; time slower in 2 (+41 % at 4x512 fp32 … +61 % at 2x128x512 bf16, 2
    confirmed), not decided in 4 (…). aten::add and aten::rsqrt
    move more data (bytes ×512 at 4x512 bf16); new ops aten::empty_like and
    aten::full_like.`` Without a cause: the plain "no change" sentence.
    """
    from neuronasv.report.causes import cause_headline, work_sentence
    from neuronasv.report.digest import digest

    d = digest(doc)
    causes = d.causes
    if not causes:
        return "No change found between base and head (see the comparison above)."
    view = causes[0]
    # The gate's words (which rule fired) and the rows' stored states, never the verdict.
    word = f"Fails ({d.gate})" if d.gate else "No gate rule fired"
    text = f"{word}: {cause_headline(view)}."
    if view.work:
        text += " " + work_sentence(view.work)
    if len(causes) > 1:
        text += f" (and {len(causes) - 1} more cause{'s' if len(causes) > 2 else ''})"
    return text


class DemoSteps(Protocol):
    """What the demo calls: :mod:`neuronasv.api` (a recorder in tests)."""

    def run(self, opts: RunOptions) -> RunSummary: ...
    def compare(self, opts: CompareOptions) -> FindingsDocument: ...
    def confirm(self, opts: ConfirmOptions) -> Confirmed: ...
    def comment(self, opts: CommentOptions) -> Commented: ...
    def regressions(self, opts: RegressionsOptions) -> FindingsDocument: ...
    def publish(self, opts: PublishOptions) -> Published: ...


def _write(path: str, text: str) -> None:
    write_atomic(path, text)


@dataclass(frozen=True)
class DemoOptions:
    """What the demo plays (``neuronasv demo``'s options).

    Attributes:
        patch: the example change (default: ``examples/regress-rmsnorm-eps.patch``).
        bench: asv ``--bench`` regex limiting the suite (default :data:`DEFAULT_BENCH`).
        fresh: delete ``out`` first (otherwise results of earlier runs are reused).
        rounds: ABAB rounds for the confirmation step (0 = skip it).
        backend: ``auto`` (default: the accelerator when there is one), ``cpu``, ``cuda``,
            ``neuron``.
        metrics: what the run measures (``neuronasv run --metrics``); None: its default.
    """

    patch: str | None = None
    bench: str | None = DEFAULT_BENCH
    fresh: bool = False
    rounds: int = 3
    backend: str = "auto"
    metrics: tuple[str, ...] | None = None


_STEPS = 8


@dataclass(frozen=True)
class _Play:
    """What steps 3 to 8 work on."""

    paths: DemoPaths
    base: str
    head: str
    machine: str
    backend: str
    bench: str | None
    rounds: int
    metrics: tuple[str, ...] | None = None


def _play(
    steps: DemoSteps,
    p: _Play,
    *,
    step: Callable[[int, str], None],
    replay: Callable[..., None],
    out: TextIO,
) -> None:
    """Steps 3 to 8 through ``steps`` (the API), each after its replay line; what each
    step shows goes to ``out`` (the walk-through)."""
    from neuronasv.api import (
        CommentOptions,
        CompareOptions,
        ConfirmOptions,
        PublishOptions,
        RegressionsOptions,
        RunOptions,
    )
    from neuronasv.report.document import render_document

    paths, base, head = p.paths, p.base, p.head
    run_args = ["run", base, head, "--repo", paths.repo, "--results-dir", paths.results]
    run_args += ["--machine", p.machine, "--backend", p.backend]
    if p.bench:
        run_args += ["--bench", p.bench]
    if p.metrics:
        run_args += ["--metrics", ",".join(p.metrics)]
    # The callgrind pass's counts on the CPU come from neuronasv run's own default (where
    # valgrind is).
    replay(*run_args)
    summary = steps.run(RunOptions(
        repo=paths.repo, commits=(base, head), results_dir=paths.results, machine=p.machine,
        backend=p.backend, bench=p.bench, compile_cache=env.COMPILE_CACHE.read(),
        metrics=p.metrics,
    ))  # fmt: skip
    emit(summary.line(), stream=out)

    step(4, "Compare base -> head (per-series verdicts, op attribution)")
    common = ["--results-dir", paths.results, "--repo", paths.repo]
    replay("compare", base, head, *common, "--format", "json", "--out", paths.findings)
    replay("compare", base, head, *common, "--format", "text", "--out", paths.compare_text)
    doc = steps.compare(
        CompareOptions(base=base, head=head, results_dir=paths.results, repo=paths.repo)
    )
    _write(paths.findings, render_document(doc, "json"))
    text = render_document(doc, "text")
    _write(paths.compare_text, text)
    emit(text.rstrip(), stream=out)

    report = paths.findings
    if p.rounds > 0:
        step(5, f"Confirm suspected regressions: base/head interleaved, {p.rounds} rounds")
        replay(
            "confirm", "--findings", paths.findings, "--repo", paths.repo,
            "--regressions-only", "--rounds", str(p.rounds), "--backend", p.backend,
            "--max-rounds", str(p.rounds + 3), "--budget-seconds", "300",
            "--format", "json", "--out", paths.confirmed,
        )  # fmt: skip
        done = steps.confirm(ConfirmOptions(
            findings=paths.findings, repo=paths.repo, rounds=p.rounds,
            max_rounds=p.rounds + 3, budget_seconds=300.0, backend=p.backend,
            include_noisy=False,
        ))  # fmt: skip
        _write(paths.confirmed, render_document(done.doc, "json"))
        report = paths.confirmed
    else:
        step(5, "Confirmation skipped (--rounds 0)")

    step(6, "PR comment, dry run (what would be sent to GitHub)")
    os.environ.pop("GITHUB_TOKEN", None)  # never post from the demo
    replay(
        "comment", "--pr", "1", "--report", report, "--dry-run", "--out", paths.requests,
        "--body-out", paths.comment, "--github-repo", "example/neuronasv",
    )  # fmt: skip
    commented = steps.comment(CommentOptions(
        pr=1, report=report, dry_run=True,
        environ={**os.environ, "GITHUB_REPOSITORY": "example/neuronasv"},
    ))  # fmt: skip
    _write(paths.comment, commented.body)
    _write(paths.requests, commented.dry_run or "")

    step(7, "History: change points, and the newest commit against its parent")
    replay(
        "regressions", *common, "--report", report, "--format", "json", "--out", paths.regressions
    )
    replay("regressions", *common, "--report", report, "--format", "text")
    from neuronasv.report.tables import history_text

    history = steps.regressions(
        RegressionsOptions(results_dir=paths.results, repo=paths.repo, report=report)
    )
    _write(paths.regressions, history.dumps())
    emit(history_text(history, only_open=False).rstrip("\n"), stream=out)

    step(8, "History site")
    replay("publish", "--results-dir", paths.results, "--repo", paths.repo,
           "--out", paths.site, "--findings", paths.regressions)  # fmt: skip
    published = steps.publish(PublishOptions(
        out=paths.site, results_dir=paths.results, repo=paths.repo,
        findings=(paths.regressions,),
    ))  # fmt: skip
    emit(published.line(), stream=out)


def run_demo(
    source_repo: str,
    out: str,
    *,
    options: DemoOptions | None = None,
    stream: TextIO | None = None,
    resolve_backend: Callable[[str], str] | None = None,
    steps: DemoSteps | None = None,
) -> DemoOutcome:
    """Play the whole flow; see the module docstring.

    Args:
        source_repo: the checkout to demo (its HEAD is the base commit).
        out: scratch folder for the clone, results, comment and site.
        options: the change, suite, rounds and backend (default: :class:`DemoOptions`'s).
        stream: where the walk-through is written (default: stdout, read when it runs):
            it is the demo's output, not logging; the steps' own progress is logged.
        resolve_backend: backend name -> the backend that will run (default: the measure
            registry's :func:`neuronasv.measure.backends.get_backend`; injectable).
        steps: what runs each step (default: :mod:`neuronasv.api`; a recorder in tests).
    """
    opts = options or DemoOptions()
    out_stream = stream or sys.stdout

    def say(line: str) -> None:
        emit(line, stream=out_stream)

    patch, bench, fresh, rounds, backend = (
        opts.patch, opts.bench, opts.fresh, opts.rounds, opts.backend
    )  # fmt: skip
    started = time.monotonic()
    if resolve_backend is None:

        def resolve_backend(name: str) -> str:
            from neuronasv.measure.backends import get_backend

            return get_backend(name).name

    source_repo = os.path.abspath(source_repo)  # git runs in other folders below
    paths = DemoPaths(os.path.abspath(out))
    patch_path = os.path.abspath(patch or os.path.join(source_repo, DEFAULT_PATCH))
    if not os.path.isfile(patch_path):
        raise UsageError(f"example change not found: {patch_path}")
    # Everything is checked before anything is deleted or written.
    base = _git(source_repo, "rev-parse", "HEAD")
    marked = check_out_folder(paths.out, source_repo)
    if fresh and marked:
        shutil.rmtree(paths.out)
    elif fresh and os.path.isdir(paths.out) and os.listdir(paths.out):
        raise UsageError(
            f"--fresh deletes only a folder the demo marked as its own ({MARKER});"
            f" {paths.out} has no marker (an older demo's?)",
            hint="delete it yourself, or run without --fresh to reuse it",
        )
    os.makedirs(paths.out, exist_ok=True)
    with open(os.path.join(paths.out, MARKER), "w", encoding="utf-8") as fh:
        fh.write("made by `neuronasv demo`; `neuronasv demo --fresh` may delete this folder\n")

    def step(i: int, text: str) -> None:
        say(f"\n[{i}/{_STEPS}] {text}  (+{time.monotonic() - started:.0f} s)")

    program = neuronasv_command()
    if steps is None:
        from neuronasv import api

        steps = api

    def replay(*argv: str) -> None:
        say("$ " + shlex.join([program, *argv]))  # a line the shell replays as it is

    step(1, "Scratch clone of this checkout's HEAD (your repo stays untouched)")
    if _git(source_repo, "status", "--porcelain", "--untracked-files=no"):
        say("note: uncommitted changes are not part of the demo; it uses HEAD")
    if os.path.isdir(os.path.join(paths.repo, ".git")):
        _git(paths.repo, "fetch", "--quiet", source_repo, "HEAD")
        _git(paths.repo, "checkout", "--quiet", "--detach", base)
    else:
        _git(os.path.dirname(paths.repo) or ".", "clone", "--quiet", source_repo, paths.repo)
        _git(paths.repo, "checkout", "--quiet", "--detach", base)
    _ensure_config_branches(paths.repo, base)
    say(f"base  {base[:12]}  (HEAD of {source_repo})")

    step(2, f"Example change: {os.path.relpath(patch_path, source_repo)}")
    _git(paths.repo, "apply", "--index", patch_path)
    # One minute after the base: history pages order and date commits by it.
    when = f"@{int(_git(paths.repo, 'show', '-s', '--format=%ct', base)) + 60} +0000"
    _git(
        paths.repo, "commit", "--quiet", "-m", "demo: keep eps on the device in the naive RMSNorm",
        env_extra={"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when},
    )  # fmt: skip
    head = _git(paths.repo, "rev-parse", "HEAD")
    # On a branch (not a detached HEAD), so `asv publish` lists both commits.
    _git(paths.repo, "checkout", "--quiet", "-B", DEMO_BRANCH)
    write_asv_config(paths)
    say(f"head  {head[:12]}  " + _git(paths.repo, "diff", "--stat", base, head).splitlines()[-1])

    step(3, "Benchmark base and head (asv suite with samples; progress below)")
    # Resolved here, where `neuronasv run` imported torch before: same timings on the CPU.
    backend_name = resolve_backend(backend)
    machine = _DEMO_MACHINE.format(backend=backend_name)
    if is_accelerator(backend_name):
        say(f"backend {backend_name}: the accelerator, with its shapes (--backend cpu: the CPU)")
    play = _Play(paths, base, head, machine, backend_name, bench, rounds, opts.metrics)
    _play(steps, play, step=step, replay=replay, out=out_stream)
    report = paths.confirmed if rounds > 0 else paths.findings
    with open(report, encoding="utf-8") as fh:
        doc = FindingsDocument.loads(fh.read(), source=report)
    sentence = verdict_sentence(doc)
    elapsed = time.monotonic() - started
    say("\nWhere to look:")
    say(f"  PR comment      {paths.comment}")
    say(f"  findings        {report}")
    say(f"  history site    {os.path.join(paths.site, 'index.html')}")
    say(f"  asv results     {paths.results}")
    asv = asv_command()
    say("\nThe results are plain asv; these work as printed, from any folder:")
    compare = [asv, "compare", "--config", paths.asv_config, "--machine", machine, base, head]
    say(f"  {shlex.join(compare)}")
    publish = shlex.join([asv, "publish", "--config", paths.asv_config])
    say(f"  {publish}   # -> {os.path.join(paths.asv_html, 'index.html')}")
    say(f"\n{sentence}")
    say(f"(demo took {elapsed:.0f} s)")
    return DemoOutcome(
        paths=paths,
        base=base,
        head=head,
        verdict=sentence,
        regressions=sum(
            1 for f in doc.findings if f.state.direction == "worse" and f.acknowledged is None
        ),
        seconds=elapsed,
    )
