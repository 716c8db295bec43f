"""The workflow steps that chain several commands (``python -m neuronasv.ci STEP``).

Each step runs ``python -m neuronasv COMMAND`` of this interpreter (the installed package,
never a script of the caller's checkout), in the repository at ``--repo`` (default: the
current folder), and writes its workflow outputs with :func:`~neuronasv.ci.outputs.set_output`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from neuronasv.ci.outputs import set_output
from neuronasv.ci.owned import claim_dir, remove_owned
from neuronasv.errors import UsageError
from neuronasv.proc import run_process, stream_process
from neuronasv.store.git import Git

__all__ = [
    "PrMeasurement",
    "PullRequestRef",
    "analyse",
    "check_site_branch",
    "issues",
    "machine_for_shard",
    "parse_shards",
    "plan",
    "pr_bench",
    "regression_detected",
    "site_branch",
    "torchless_requirements",
]

log = logging.getLogger(__name__)

_NAME = re.compile(r"[A-Za-z0-9._-]+")
_SHA = re.compile(r"[0-9a-f]{40}")


def _module(module: str, *args: str) -> None:
    """``python -m MODULE ARGS`` of this interpreter, its output streamed; a failure ends the
    step with the command's exit status (the proc runner kills its group on Ctrl-C). Its
    lines are logged (INFO): in Actions, text that would be a workflow command is not one."""
    rc = stream_process([sys.executable, "-m", module, *args], on_line=log.info)
    if rc != 0:
        raise SystemExit(rc if rc > 0 else 130)


def nx(*args: str) -> None:
    """``neuronasv ARGS`` of this interpreter (see :func:`_module`)."""
    _module("neuronasv", *args)


def machine_for_shard(base: str, shard: str) -> str:
    """``base`` for the single shard ``all``, else ``base-shard`` (disjoint result folders)."""
    for what, value in (("machine name", base), ("shard name", shard)):
        if not _NAME.fullmatch(value):
            raise UsageError(f"{what} {value!r} must be [A-Za-z0-9._-]+")
    return base if shard == "all" else f"{base}-{shard}"


def parse_shards(text: str, machine: str) -> list[dict[str, str]]:
    """The shard list (JSON ``[{name, bench}]``), checked, each with its machine name."""
    try:
        shards = json.loads(text or '[{"name": "all", "bench": ""}]')
    except ValueError as exc:
        raise UsageError(f"the shard list is not JSON: {exc}") from None
    if not isinstance(shards, list) or not shards:
        raise UsageError("the shard list must be a non-empty JSON list")
    out: list[dict[str, str]] = []
    for s in shards:
        if not isinstance(s, dict):
            raise UsageError(f"each shard needs a name: {s!r}")
        name = str(s.get("name", ""))
        if any(o["name"] == name for o in out):
            raise UsageError(f"duplicate shard name {name!r}")
        out.append({"name": name, "bench": str(s.get("bench", "")),
                    "machine": machine_for_shard(machine, name)})  # fmt: skip
    return out


def plan(
    repo: str, commit: str, *, machine: str, shards_json: str, backfill: int,
    store_args: Sequence[str],
) -> None:  # fmt: skip
    """The pushed commit plus recent first-parent commits a shard has no result for."""
    if not 0 <= backfill <= 100:
        raise UsageError(f"backfill must be 0..100, got {backfill}")
    shards = parse_shards(shards_json, machine)
    git = Git(repo)
    head = git.rev_parse(commit)
    recent = git.ancestors(head, backfill + 1)
    want = {head}
    if backfill:
        for shard in shards:
            proc = run_process(
                [sys.executable, "-m", "neuronasv", "store", "missing", "--repo", repo,
                 *store_args, "--machine", shard["machine"], *recent],
                text=True,
            )  # fmt: skip
            if proc.returncode != 0:
                sys.stderr.write(str(proc.stderr))
                raise SystemExit(proc.returncode)
            want.update(str(proc.stdout).split())
    ordered = [c for c in reversed(recent) if c in want]
    log.info(f"==> benchmarking {len(ordered)} commit(s) on {len(shards)} shard(s)")
    set_output("commits", " ".join(ordered))
    set_output("shards", json.dumps(shards, separators=(",", ":")))


def regression_detected(findings: str | os.PathLike[str]) -> bool:
    """Whether the findings document's commit status would be a failure (a regression)."""
    from neuronasv.github.statuses import status_payload
    from neuronasv.report.load import load_findings

    return bool(status_payload(load_findings(os.fspath(findings)))["state"] == "failure")


@dataclass(frozen=True)
class PullRequestRef:
    """The pull request a ``pr-bench`` measures.

    Attributes:
        number: the PR number (≥ 1).
        base, head: full commit hashes (the measurement compares head with their merge base).
        github_repo: ``owner/name``, for the comment's links.
    """

    number: int
    base: str
    head: str
    github_repo: str


@dataclass(frozen=True)
class PrMeasurement:
    """How a ``pr-bench`` measures.

    Attributes:
        machine: the machine name (resolved by :func:`machine_for_shard`).
        bench: a ``--bench`` regex, or empty for every benchmark.
        rounds: confirmation rounds (0: no ``neuronasv confirm``).
        confirm_args: more ``neuronasv confirm`` options (``--max-rounds`` defaults to
            ``rounds + 3``, ``--budget-seconds``, ``--samples``, ``--history-dir``).
        metrics: ``neuronasv run --metrics`` (empty: its default).
    """

    machine: str
    bench: str
    rounds: int
    confirm_args: Sequence[str] = ()
    metrics: str = ""


def pr_bench(
    repo: str, pr: PullRequestRef, how: PrMeasurement, *, out: str, traces_out: str | None
) -> None:
    """The unprivileged PR measurement (the artifact layout of docs/runners.md)."""
    base, head, rounds, bench, metrics = pr.base, pr.head, how.rounds, how.bench, how.metrics
    if pr.number < 1 or not (_SHA.fullmatch(base) and _SHA.fullmatch(head)):
        raise UsageError("--pr must be a PR number and --base/--head full commit hashes")
    machine = machine_for_shard(how.machine, "all")
    outp = Path(out)
    results, traces_all = outp / "results", outp / "traces-all"
    traces = Path(traces_out) if traces_out else outp / "traces"
    outp.mkdir(parents=True, exist_ok=True)
    for p in (results, traces_all, traces):  # a user's folder is refused, never deleted
        claim_dir(str(p))
    mb = Git(repo).text("merge-base", base, head)
    findings = str(outp / "findings.json")
    where = ["--results-dir", str(results), "--machine", machine, "--repo", repo]
    run = ["run", *where, "--keep-traces", "--traces-dir", str(traces_all)]
    run += ["--metrics", metrics] if metrics else []  # empty: neuronasv run's default
    nx(*run, *(["--bench", bench] if bench else []), mb, head)
    nx("compare", mb, head, *where, "--format", "json", "--out", findings)
    if rounds:
        more = list(how.confirm_args)
        if "--max-rounds" not in more:
            more += ["--max-rounds", str(rounds + 3)]
        nx("confirm", "--findings", findings, "--repo", repo, "--rounds", str(rounds),
           "--format", "json", "--out", findings, "--rounds-out", str(outp / "rounds.json"),
           *more)  # fmt: skip
    _module("neuronasv.publish.traces", "--findings", findings, "--traces-dir", str(traces_all),
            "--machine", machine, "--out", str(traces))  # fmt: skip
    remove_owned(str(traces_all))
    nx("comment", "--pr", str(pr.number), "--report", findings, "--dry-run", "--out", os.devnull,
       "--body-out", str(outp / "comment.md"), "--github-repo", pr.github_repo)  # fmt: skip
    for name, value in (("pr-number", str(pr.number)), ("head-sha", head), ("base-sha", mb)):
        (outp / name).write_text(value + "\n", encoding="ascii")
    set_output("regression-detected", str(regression_detected(findings)).lower())


def analyse(
    repo: str, *, out: str, site: str, traces_dir: str | None, store_args: Sequence[str],
    commit_url: str | None, site_url: str | None, title: str | None,
) -> None:  # fmt: skip
    """Pull the history, change points per machine, and the site."""
    outp = Path(out)
    outp.mkdir(parents=True, exist_ok=True)
    history = outp / "history"
    claim_dir(str(history))  # deleted at the end: only a folder a step of ours made
    nx("store", "pull", "--repo", repo, *store_args, "--out", str(history))
    machines = sorted(p.parent.name for p in history.glob("*/machine.json"))
    if not machines:
        raise UsageError("no machine folders in the results branch")
    docs = []
    for machine in machines:
        doc = str(outp / f"regressions-{machine}.json")
        nx("regressions", "--results-dir", str(history), "--machine", machine, "--repo", repo,
           "--format", "json", "--out", doc)  # fmt: skip
        docs += ["--findings", doc]
    pub = ["publish", "--results-dir", str(history), "--repo", repo, "--out", site, "--no-cache"]
    pub += [*(["--commit-url", commit_url] if commit_url else [])]
    pub += [*(["--base-url", site_url] if site_url else [])]
    pub += [*(["--title", title] if title else [])]
    if traces_dir and os.path.isdir(traces_dir):
        pub += ["--traces-dir", traces_dir]
    nx(*pub, *docs)
    remove_owned(str(history))
    detected = any(regression_detected(d) for d in docs[1::2])
    set_output("regression-detected", str(detected).lower())


def issues(findings_dir: str, *, site_url: str | None, dry_run: bool) -> None:
    """``neuronasv issues-sync`` over every ``regressions-<machine>.json`` of the folder."""
    folder = Path(findings_dir)
    docs = sorted(str(p) for p in (folder.iterdir() if folder.is_dir() else ())
                  if p.name.startswith("regressions-") and p.suffix == ".json")  # fmt: skip
    if not docs:
        raise UsageError(
            f"no regressions-<machine>.json in {findings_dir}",
            hint="download the `regressions` artifact of neuronasv-commit.yml",
        )
    nx("issues-sync", *(["--dry-run"] if dry_run else []),
       *(["--site-url", site_url] if site_url else []), *docs)  # fmt: skip
    set_output("synced", "false" if dry_run else "true")


def site_files(site: str) -> dict[str, Path]:
    """Every regular file under ``site`` by its path there (symbolic links not followed)."""
    root = Path(site)
    if not root.is_dir() or root.is_symlink():
        raise UsageError(f"--site {site} is not a folder")
    files: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink():
                files[path.relative_to(root).as_posix()] = path
    if "index.html" not in files:
        raise UsageError(f"{site} holds no index.html: not a site `neuronasv publish` built")
    return files


def _remote_default(repo: str, remote: str, token_env: str | None) -> str | None:
    """The remote's default branch: its recorded HEAD, else asked (``ls-remote --symref``)."""
    from neuronasv.ci.branches import remote_head
    from neuronasv.store.gitstore import token_git_env

    git = Git(repo)
    known = remote_head(git)
    if known is not None and known[0] == remote:
        return known[1]
    env = token_git_env(token_env) if token_env else {}
    res = git.run("ls-remote", "--symref", remote, "HEAD", env={**env, "GIT_TERMINAL_PROMPT": "0"},
                  check=False)  # fmt: skip
    m = re.search(r"^ref: refs/heads/(\S+)\tHEAD$", res.text, flags=re.M)
    return m.group(1) if res.returncode == 0 and m else None


def check_site_branch(
    branch: str, *, results_branch: str | None, default_branch: str = "", repo: str = ".",
    remote: str = "origin", token_env: str | None = None,
) -> None:  # fmt: skip
    """A UsageError unless ``branch`` (the site's; empty = none) is neither the results
    branch nor the default branch (``default_branch``, else the remote's, asked).

    Committing the site there would put ``index.html`` over the user's own files, or mix
    the site into the results history; the plan job checks it before any measurement.
    """
    if not branch:
        return
    from neuronasv.store.gitstore import DEFAULT_BRANCH

    if branch == (results_branch or DEFAULT_BRANCH):
        raise UsageError(f"the site branch {branch!r} is the results branch: choose another",
                         hint="site-branch: gh-pages")  # fmt: skip
    default = default_branch or _remote_default(repo, remote, token_env)
    if default is None:
        raise UsageError(
            f"cannot tell the repository's default branch, so the site branch {branch!r}"
            " cannot be checked against it",
            hint="pass --default-branch (the workflows pass github.event.repository"
            ".default_branch)",
        )
    if branch == default:
        raise UsageError(
            f"the site branch {branch!r} is the default branch: the site would be committed"
            " over your code",
            hint="site-branch: gh-pages (a branch of its own; Pages from a branch)",
        )


def site_branch(
    repo: str, *, site: str, remote: str, branch: str, token_env: str | None,
    results_branch: str | None = None, default_branch: str = "",
) -> None:  # fmt: skip
    """Put the site on ``branch`` (GitHub Pages from a branch): one commit on top of the
    branch, fetched, re-applied and retried as the results store does, never forced.

    Files of an earlier site that this one lacks stay on the branch (the store adds and
    replaces, it never deletes); ``.nojekyll`` keeps Pages from running Jekyll on it.
    """
    from neuronasv.store.gitstore import ResultsStore, token_git_env

    check_site_branch(branch, results_branch=results_branch, default_branch=default_branch,
                      repo=repo, remote=remote, token_env=token_env)  # fmt: skip
    files: dict[str, bytes | Path] = {**site_files(site), ".nojekyll": b""}
    env = token_git_env(token_env) if token_env else {}
    store = ResultsStore(repo, remote=remote, branch=branch, env=env)
    rep = store.write(files, f"neuronasv: the history site ({len(files)} files)")
    state = "published" if rep.changed else "already published (no change)"
    log.info(f"{state}: {len(files)} files on {branch} at {rep.commit[:12]}")
    set_output("site-commit", rep.commit)


def torchless_requirements() -> list[str]:
    """The installed package's dependencies without torch (hosted jobs only read results)."""
    from importlib.metadata import requires

    out = []
    for req in requires("neuronasv") or []:
        if "extra ==" in req:
            continue
        name = re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].strip().lower()
        if name not in ("torch", "torch-neuronx", "torch_neuronx"):
            out.append(req)
    return out
