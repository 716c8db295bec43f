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
7. ``neuronasv regressions`` — change points over the (short) history;
8. ``neuronasv publish`` — the static history site;

then prints where to look and the one-sentence verdict that names the op. Each step runs
the real command (``neuronasv.cli.main``) with the arguments it prints, so a user can
replay any of them by hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from neuronasv.errors import NeuronasvError, UsageError
from neuronasv.model import Finding, FindingsDocument

__all__ = [
    "DEFAULT_BENCH",
    "DEFAULT_PATCH",
    "DemoOutcome",
    "DemoPaths",
    "run_demo",
    "verdict_sentence",
]

DEFAULT_PATCH = os.path.join("examples", "regress-rmsnorm-eps.patch")
# The naive and fused RMSNorm: the change is in the naive one and the fused one is the
# control. The compiled variant is left out by default because every confirmation round
# compiles it again in a fresh process (10-25 s each here); ``--bench rmsnorm`` adds it.
DEFAULT_BENCH = r"rmsnorm\.(Naive|Fused)\."
_DEMO_MACHINE = "demo-{backend}"
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
    env = {**os.environ, **_GIT_ENV, **(env_extra or {})}
    proc = subprocess.run(
        ["git", "-C", repo, *args], capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode != 0:
        raise NeuronasvError(
            f"git {' '.join(args)} failed in {repo}: {proc.stderr.strip() or proc.stdout.strip()}"
        )
    return proc.stdout.strip()


def verdict_sentence(doc: FindingsDocument) -> str:
    """One sentence for the end of the demo: the worst regression with its op attribution.

    Workload totals with attribution come first (they name the op that explains them),
    then op series, largest change first.
    """
    from neuronasv.analyse.attribution import headline

    regs = [
        f
        for f in doc.findings
        if f.verdict == "regression" and f.acknowledged is None and f.confirmed is not False
    ]
    if not regs:
        return "No regression found between base and head (see the comparison above)."

    def rank(f: Finding) -> tuple[int, int, int, float]:
        return (
            0 if f.confirmed else 1,
            0 if f.attribution else 1,
            0 if f.series.op is None else 1,
            -(f.ratio or 0.0),
        )

    worst = sorted(regs, key=rank)[0]
    more = f" (and {len(regs) - 1} more regressed series)" if len(regs) > 1 else ""
    if worst.confirmed:
        more += ", confirmed by an interleaved re-run"
    return f"Regression: {headline(worst)}{more}."


def run_demo(
    source_repo: str,
    out: str,
    *,
    patch: str | None = None,
    bench: str | None = DEFAULT_BENCH,
    fresh: bool = False,
    rounds: int = 3,
    backend: str = "auto",
    say: Callable[[str], None] = print,
    cli: Callable[[Sequence[str]], int] | None = None,
    resolve_backend: Callable[[str], str] | None = None,
) -> DemoOutcome:
    """Play the whole flow; see the module docstring.

    Args:
        source_repo: the checkout to demo (its HEAD is the base commit).
        out: scratch folder for the clone, results, comment and site.
        patch: the example change (default: ``examples/regress-rmsnorm-eps.patch``).
        rounds: ABAB rounds for the confirmation step (0 = skip it).
        bench: asv ``--bench`` regex limiting the suite (default :data:`DEFAULT_BENCH`).
        fresh: delete ``out`` first (otherwise results of earlier runs are reused).
        backend: ``auto`` (default: the accelerator when there is one), ``cpu``, ``cuda``,
            ``neuron``.
        say: where progress lines go.
        cli: the command runner (default :func:`neuronasv.cli.main`; injectable for tests).
        resolve_backend: backend name -> the backend that will run (default: the measure
            registry's :func:`neuronasv.measure.backends.get_backend`; injectable).
    """
    if cli is None:
        from neuronasv.cli import main as default_cli

        cli = default_cli
    runner: Callable[[Sequence[str]], int] = cli
    started = time.monotonic()
    if resolve_backend is None:

        def resolve_backend(name: str) -> str:
            from neuronasv.measure.backends import get_backend

            return get_backend(name).name

    paths = DemoPaths(os.path.abspath(out))
    patch_path = os.path.abspath(patch or os.path.join(source_repo, DEFAULT_PATCH))
    if not os.path.isfile(patch_path):
        raise UsageError(f"example change not found: {patch_path}")
    if fresh and os.path.isdir(paths.out):
        shutil.rmtree(paths.out)
    os.makedirs(paths.out, exist_ok=True)

    steps = 8

    def step(i: int, text: str) -> None:
        say(f"\n[{i}/{steps}] {text}  (+{time.monotonic() - started:.0f} s)")

    def command(*argv: str) -> None:
        say("$ neuronasv " + " ".join(argv))
        code = runner(list(argv))
        if code not in (0, 1):
            raise NeuronasvError(f"`neuronasv {argv[0]}` failed with exit code {code}")

    step(1, "Scratch clone of this checkout's HEAD (your repo stays untouched)")
    base = _git(source_repo, "rev-parse", "HEAD")
    if _git(source_repo, "status", "--porcelain", "--untracked-files=no"):
        say("note: uncommitted changes are not part of the demo; it uses HEAD")
    if os.path.isdir(os.path.join(paths.repo, ".git")):
        _git(paths.repo, "fetch", "--quiet", source_repo, "HEAD")
        _git(paths.repo, "checkout", "--quiet", "--detach", base)
    else:
        _git(os.path.dirname(paths.repo) or ".", "clone", "--quiet", source_repo, paths.repo)
        _git(paths.repo, "checkout", "--quiet", "--detach", base)
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
    say(f"head  {head[:12]}  " + _git(paths.repo, "diff", "--stat", base, head).splitlines()[-1])

    step(3, "Benchmark base and head (asv suite with samples; progress below)")
    # Resolved here, where `neuronasv run` imported torch before: same timings on the CPU.
    backend_name = resolve_backend(backend)
    machine = _DEMO_MACHINE.format(backend=backend_name)
    if backend_name != "cpu":
        say(f"backend {backend_name}: the accelerator, with its shapes (--backend cpu: the CPU)")
    run_args = ["run", base, head, "--repo", paths.repo, "--results-dir", paths.results]
    run_args += ["--machine", machine, "--backend", backend_name]
    if bench:
        run_args += ["--bench", bench]
    command(*run_args)

    step(4, "Compare base -> head (per-series verdicts, op attribution)")
    common = ["--results-dir", paths.results, "--repo", paths.repo]
    command("compare", base, head, *common, "--format", "json", "--out", paths.findings)
    command("compare", base, head, *common, "--format", "text", "--out", paths.compare_text)
    with open(paths.compare_text, encoding="utf-8") as fh:
        say(fh.read().rstrip())

    report = paths.findings
    if rounds > 0:
        step(5, f"Confirm suspected regressions: base/head interleaved, {rounds} rounds")
        command(
            "confirm", "--findings", paths.findings, "--repo", paths.repo,
            "--regressions-only", "--rounds", str(rounds), "--backend", backend_name,
            "--format", "json", "--out", paths.confirmed,
        )  # fmt: skip
        report = paths.confirmed
    else:
        step(5, "Confirmation skipped (--rounds 0)")

    step(6, "PR comment, dry run (what would be sent to GitHub)")
    os.environ.pop("GITHUB_TOKEN", None)  # never post from the demo
    command(
        "comment", "--pr", "1", "--report", report, "--dry-run", "--out", paths.requests,
        "--body-out", paths.comment, "--repo", "example/neuronasv",
    )  # fmt: skip

    step(7, "Change points over history (open regressions)")
    command("regressions", *common, "--format", "json", "--out", paths.regressions)
    command("regressions", *common, "--format", "text")

    step(8, "History site")
    command(
        "publish",
        "--results-dir",
        paths.results,
        "--repo",
        paths.repo,
        "--out",
        paths.site,
        "--findings",
        paths.regressions,
    )

    with open(report, encoding="utf-8") as fh:
        doc = FindingsDocument.loads(fh.read(), source=report)
    sentence = verdict_sentence(doc)
    elapsed = time.monotonic() - started
    say("\nWhere to look:")
    say(f"  PR comment      {paths.comment}")
    say(f"  findings        {report}")
    say(f"  history site    {os.path.join(paths.site, 'index.html')}")
    say(f"  asv results     {paths.results}  (try: asv compare, asv publish)")
    say(f"\n{sentence}")
    say(f"(demo took {elapsed:.0f} s)")
    return DemoOutcome(
        paths=paths,
        base=base,
        head=head,
        verdict=sentence,
        regressions=doc.count("regression"),
        seconds=elapsed,
    )
