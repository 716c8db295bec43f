"""``python -m neuronasv.ci STEP [options]``: the reusable workflows' steps (see the package doc).

    python -m neuronasv.ci plan COMMIT [--machine M] [--shards JSON] [--backfill N]
                                [--site-branch B --default-branch D] [store opts]
    python -m neuronasv.ci pr-bench --pr N --base SHA --head SHA --out DIR [--machine M]
                                    [--bench RE] [--traces-out DIR] [--rounds 3]
                                    [--metrics devtime[,instructions]]
    python -m neuronasv.ci pr-comment --artifact DIR [--event FILE] [--dry-run] ...
    python -m neuronasv.ci analyse --out DIR --site DIR [--traces-dir T] [--title T] [store opts]
    python -m neuronasv.ci site-branch --site DIR --branch B [--default-branch D] [store opts]
    python -m neuronasv.ci issues DIR [--site-url URL] [--dry-run]   # regression issues
    python -m neuronasv.ci bisect --out DIR [--add RESULTS]... [--minutes 30] [store opts]
                                  # bisect open regressions over unmeasured commits
    python -m neuronasv.ci instruction-tools --metrics LIST  # valgrind + gcc (CPU runners)
    python -m neuronasv.ci requirements      # dependencies without torch, one a line
    python -m neuronasv.ci verdict FINDINGS  # regression-detected=true|false

Store options (plan, analyse, site-branch): ``--remote R --branch B --token-env VAR`` as for
``neuronasv store``. Exit codes are neuronasv's (``neuronasv/errors.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from neuronasv import env
from neuronasv.log import cli_output

__all__ = ["main"]


def _store_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--remote", default="origin")
    p.add_argument("--branch", default=None, help="results branch (default: neuronasv's)")
    p.add_argument("--token-env", default=None, metavar="VAR")


def _store_args(args: argparse.Namespace) -> list[str]:
    out = ["--remote", args.remote]
    if args.branch:
        out += ["--branch", args.branch]
    if args.token_env:
        out += ["--token-env", args.token_env]
    return out


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m neuronasv.ci", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--repo", default=".", help="the repository (default: here)")
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("plan")
    p.add_argument("commit")
    p.add_argument("--machine", default="ci", help="asv machine name")
    p.add_argument("--shards", default="", help='JSON [{"name", "bench"}] (default: one)')
    p.add_argument("--backfill", type=int, default=5)
    p.add_argument("--site-branch", default="", help="refused when it is a branch of ours")
    p.add_argument("--default-branch", default="", help="the repository's default branch")
    _store_opts(p)
    p = sub.add_parser("pr-bench")
    p.add_argument("--pr", type=int, required=True)
    p.add_argument("--base", required=True)
    p.add_argument("--head", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--machine", default="ci", help="asv machine name")
    p.add_argument("--bench", default="")
    p.add_argument("--traces-out", default=None)
    p.add_argument("--rounds", type=int, default=3, help="ABAB rounds (0: no confirmation)")
    p.add_argument("--metrics", default="",
                   help="passed to neuronasv run --metrics (empty: its default)")  # fmt: skip
    for opt in ("--max-rounds", "--budget-seconds", "--samples", "--history-dir"):
        p.add_argument(opt, default=None, help=f"passed to neuronasv confirm {opt}")
    p = sub.add_parser("analyse")
    p.add_argument("--out", required=True)
    p.add_argument("--site", required=True)
    p.add_argument("--traces-dir", default=None)
    p.add_argument("--site-url", default=os.environ.get("SITE_URL") or None)
    p.add_argument("--title", default=None)
    _store_opts(p)
    p = sub.add_parser("site-branch", help="put the built site on a branch (never forced)")
    p.add_argument("--site", required=True)
    p.add_argument("--results-branch", default=None, help="refused as the site's branch")
    p.add_argument("--default-branch", default="", help="refused as the site's branch")
    _store_opts(p)
    p = sub.add_parser("issues", help="neuronasv issues-sync of DIR/regressions-<machine>.json")
    p.add_argument("findings_dir", metavar="DIR")
    p.add_argument("--site-url", default=os.environ.get("SITE_URL") or None)
    p.add_argument("--dry-run", action="store_true")
    p = sub.add_parser("bisect", help="bisect open regressions whose ranges skip commits")
    p.add_argument("--out", required=True, help="results folder for what it measured")
    p.add_argument("--add", action="append", default=[], metavar="RESULTS",
                   help="this run's results folder(s), added to the stored history")
    p.add_argument("--minutes", type=float, default=30.0, help="budget of the whole step")
    p.add_argument("--machine", default=None, help="only this asv machine")
    p.add_argument("--backend", default=env.BACKEND.read(), help="$NEURONASV_BACKEND or auto")
    p.add_argument("--max-ranges", type=int, default=5)
    _store_opts(p)
    p = sub.add_parser("instruction-tools", help="valgrind and gcc when --metrics asks")
    p.add_argument("--metrics", required=True,
                   help="what `neuronasv run --metrics` gets (empty: its default)")  # fmt: skip
    sub.add_parser("pr-comment", add_help=False)
    sub.add_parser("requirements")
    p = sub.add_parser("verdict")
    p.add_argument("findings")
    return ap


def _confirm_args(args: argparse.Namespace) -> list[str]:
    out: list[str] = []
    for opt in ("max_rounds", "budget_seconds", "samples", "history_dir"):
        value = getattr(args, opt)
        if value:
            out += ["--" + opt.replace("_", "-"), value]
    return out


def _commit_url() -> str | None:
    repo = os.environ.get("GITHUB_REPOSITORY")
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
    return f"{server}/{repo}/commit/{{commit}}" if repo else None


def _dispatch(args: argparse.Namespace) -> int:
    from neuronasv.ci import flows
    from neuronasv.ci.outputs import set_output
    from neuronasv.errors import UsageError

    repo = os.path.abspath(args.repo)
    if args.step == "plan":
        flows.check_site_branch(args.site_branch, results_branch=args.branch,
                                default_branch=args.default_branch, repo=repo,
                                remote=args.remote, token_env=args.token_env)  # fmt: skip
        flows.plan(repo, args.commit, machine=args.machine, shards_json=args.shards,
                   backfill=args.backfill, store_args=_store_args(args))  # fmt: skip
    elif args.step == "pr-bench":
        github_repo = os.environ.get("GITHUB_REPOSITORY") or "local/checkout"
        flows.pr_bench(
            repo,
            flows.PullRequestRef(args.pr, args.base, args.head, github_repo),
            flows.PrMeasurement(args.machine, args.bench, args.rounds,
                                confirm_args=_confirm_args(args), metrics=args.metrics),
            out=args.out, traces_out=args.traces_out,
        )  # fmt: skip
    elif args.step == "analyse":
        flows.analyse(repo, out=args.out, site=args.site, traces_dir=args.traces_dir,
                      store_args=_store_args(args), commit_url=_commit_url(),
                      site_url=args.site_url, title=args.title)  # fmt: skip
    elif args.step == "site-branch":
        if not args.branch:
            raise UsageError("site-branch needs --branch (e.g. gh-pages)")
        flows.site_branch(repo, site=args.site, remote=args.remote, branch=args.branch,
                          token_env=args.token_env, results_branch=args.results_branch,
                          default_branch=args.default_branch)  # fmt: skip
    elif args.step == "issues":
        flows.issues(args.findings_dir, site_url=args.site_url, dry_run=args.dry_run)
    elif args.step == "bisect":
        from neuronasv.ci.bisect_step import bisect_step

        bisect_step(repo, out=args.out, minutes=args.minutes, add=args.add,
                    store_args=_store_args(args), machine=args.machine, backend=args.backend,
                    max_ranges=args.max_ranges)  # fmt: skip
    elif args.step == "instruction-tools":
        from neuronasv.ci.tools import main as tools_main

        return tools_main(args.metrics)
    elif args.step == "requirements":
        print("\n".join(flows.torchless_requirements()))
    elif args.step == "verdict":
        set_output("regression-detected", str(flows.regression_detected(args.findings)).lower())
    return 0


def _step(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """The step argv names (its first positional, after ``--repo``) and the words after it.

    Only the step decides the route: a commit, a folder or a title spelled ``pr-comment``
    further on is an argument of its own step.
    """
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--repo")
    pre.add_argument("step", nargs="?")
    ns, _ = pre.parse_known_args(argv)
    if ns.step is None:
        return None, []
    words = list(argv)
    at = next(
        i for i, w in enumerate(words) if w == ns.step and (i == 0 or words[i - 1] != "--repo")
    )
    return ns.step, words[at + 1 :]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one step; its log lines through the one handler, in Actions as workflow
    commands (:class:`neuronasv.log.ActionsHandler`)."""
    with cli_output(actions=True):
        return _main(list(sys.argv[1:] if argv is None else argv))


def _main(argv: list[str]) -> int:
    step, rest = _step(argv)
    if step == "pr-comment":  # its own parser (the privileged step keeps its options)
        from neuronasv.ci.pr_comment import main as pr_comment_main

        return pr_comment_main(rest)
    from neuronasv.cli import run_parsed

    args = _parser().parse_args(argv)
    args.func, args.command = _dispatch, f"ci {args.step}"
    return run_parsed(args)


if __name__ == "__main__":
    sys.exit(main())
