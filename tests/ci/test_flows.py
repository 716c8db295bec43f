"""The reusable workflows' steps: shards, machine names, outputs, the torchless install."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuronasv.ci import flows
from neuronasv.ci.outputs import set_output
from neuronasv.errors import UsageError


def test_shards_get_disjoint_machine_names() -> None:
    assert flows.parse_shards("", "h200") == [{"name": "all", "bench": "", "machine": "h200"}]
    two = flows.parse_shards('[{"name": "a", "bench": "x"}, {"name": "b"}]', "h200")
    assert [s["machine"] for s in two] == ["h200-a", "h200-b"]
    assert two[1]["bench"] == ""


@pytest.mark.parametrize(
    "text", ["not json", "[]", '[{"name": "a b"}]', '[{"name": "a"}, {"name": "a"}]', "[1]",
             '[{"name": ".."}]', '[{"name": "."}]', '[{"name": "-x"}]', '[{"name": ".x"}]',
             '[{"name": "a..b"}]'],
)  # fmt: skip
def test_bad_shard_lists_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        flows.parse_shards(text, "m")


@pytest.mark.parametrize("machine", ["..", ".", "-x", ".hidden", "a..b", "a/b"])
def test_plan_refuses_a_machine_that_is_not_one_folder(
    machine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38 item 5: `ci plan --machine ..` became a results-folder component (and a
    shard named `..` another): exit 2 before git is asked anything."""
    from neuronasv.ci.__main__ import main as ci_main

    assert ci_main(["--repo", str(tmp_path), "plan", "HEAD", f"--machine={machine}"]) == 2
    err = capsys.readouterr().err
    assert "machine name" in err and "Traceback" not in err, err


def test_set_output_appends_to_github_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    set_output("a", "1", {"GITHUB_OUTPUT": str(out)})
    set_output("b", "x y", {"GITHUB_OUTPUT": str(out)})
    assert out.read_text() == "a=1\nb=x y\n"
    assert capsys.readouterr().out == "a=1\nb=x y\n"
    with pytest.raises(ValueError):
        set_output("c", "two\nlines", {})


def test_torchless_requirements_keep_every_other_dependency() -> None:
    from neuronasv.ci.requirements import requirements, torchless_requirements

    reqs = torchless_requirements()
    assert [r for r in requirements(torch=True) if r not in reqs] == ["torch>=2.1"]
    names = [r.split(">")[0].split("=")[0].strip().lower() for r in reqs]
    assert "torch" not in names and "scipy" in names and "asv" in names


def _git(cwd: Path, *args: str) -> str:
    import os
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


def test_site_branch_puts_the_site_on_its_branch_never_forced(tmp_path: Path) -> None:
    """`python -m neuronasv.ci site-branch` (neuronasv-commit.yml's `site-branch` job): the
    site's regular files and .nojekyll in one commit on top of the branch; the same site
    again changes nothing; a symbolic link is not followed; the results branch is refused."""
    import os
    import subprocess
    import sys

    remote, work, site = tmp_path / "remote.git", tmp_path / "work", tmp_path / "site"
    _git(tmp_path, "init", "-q", "--bare", str(remote))
    _git(tmp_path, "init", "-q", str(work))
    _git(work, "commit", "-q", "--allow-empty", "-m", "c0")
    (site / "rmsnorm").mkdir(parents=True)
    (site / "index.html").write_text("<h1>history</h1>")
    (site / "rmsnorm" / "naive.html").write_text("<p>naive</p>")
    (site / "leak").symlink_to("/etc/passwd")

    def step(*extra: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_OUTPUT"}
        env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
        return subprocess.run([sys.executable, "-m", "neuronasv.ci", "--repo", str(work),
                               "site-branch", "--site", str(site), "--remote", str(remote),
                               *extra], env=env, capture_output=True, text=True, check=False,
                              timeout=120)  # fmt: skip

    unknown = step("--branch", "gh-pages")  # the bare remote has no HEAD branch yet
    assert unknown.returncode == 2 and "cannot tell the repository's default branch" \
        in unknown.stderr  # fmt: skip
    r = step("--branch", "gh-pages", "--results-branch", "benchmark-results",
             "--default-branch", "main")  # fmt: skip
    assert r.returncode == 0, r.stderr
    tip = _git(remote, "rev-parse", "gh-pages").strip()
    assert f"site-commit={tip}" in r.stdout
    files = _git(remote, "ls-tree", "-r", "--name-only", "gh-pages").split()
    assert files == [".nojekyll", "index.html", "rmsnorm/naive.html"]
    _git(work, "push", "-q", str(remote), "HEAD:refs/heads/main")
    _git(remote, "symbolic-ref", "HEAD", "refs/heads/main")
    again = step("--branch", "gh-pages")  # the default branch, asked of the remote
    assert again.returncode == 0 and "already published (no change)" in again.stderr
    assert _git(remote, "rev-parse", "gh-pages").strip() == tip
    same = step("--branch", "benchmark-results", "--results-branch", "benchmark-results")
    assert same.returncode == 2 and "is the results branch" in same.stderr
    for default in (["--default-branch", "main"], []):  # issue 29: never the default branch
        own = step("--branch", "main", *default)
        assert own.returncode == 2 and "is the default branch" in own.stderr, own.stderr
    assert _git(remote, "ls-tree", "-r", "--name-only", "main").split() == []
    (site / "index.html").unlink()
    gone = step("--branch", "gh-pages")
    assert gone.returncode == 2 and "no index.html" in gone.stderr


BAD_BRANCHES = ["-x", "HEAD", "refs/heads/x", "a..b", "a b", "x.lock", "@", "a@{1}", "x/",
                "/x", ".x", "a/.b", "x.", "a\x1bb", "a:b", "a~1", "a^", "a?", "a*", "a[b", "a\\b"]


@pytest.mark.parametrize("name", BAD_BRANCHES)
def test_a_bad_branch_name_is_refused_before_any_ref_is_made(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38 item 5: `ci site-branch --branch` made refs/heads/-x, refs/heads/HEAD and
    refs/heads/refs/heads/x. Every branch option takes git's check-ref-format rules, and
    refuses HEAD, a full ref name and a leading dash: exit 2, no ref anywhere."""
    from neuronasv.ci.__main__ import main as ci_main
    from neuronasv.cli import main

    remote, work, site = tmp_path / "remote.git", tmp_path / "work", tmp_path / "site"
    _git(tmp_path, "init", "-q", "--bare", str(remote))
    _git(tmp_path, "init", "-q", str(work))
    _git(work, "commit", "-q", "--allow-empty", "-m", "c0")
    site.mkdir()
    (site / "index.html").write_text("<h1>history</h1>")
    runs = [
        lambda: ci_main(["--repo", str(work), "site-branch", "--site", str(site), "--remote",
                         str(remote), "--branch", name, "--default-branch", "main"]),
        lambda: ci_main(["--repo", str(work), "plan", "HEAD", "--site-branch", name,
                         "--default-branch", "main", "--remote", str(remote)]),
        lambda: main(["store", "list", "--repo", str(work), "--remote", str(remote),
                      "--branch", name]),
    ]  # fmt: skip
    for run in runs:
        try:
            code = run()
        except SystemExit as exc:
            code = int(exc.code or 0)
        err = capsys.readouterr().err
        assert code == 2, (name, err)
        assert "branch" in err and "Traceback" not in err, err
    assert _git(remote, "for-each-ref").strip() == ""
    assert _git(work, "for-each-ref", "--format=%(refname)").split() in (
        ["refs/heads/master"], ["refs/heads/main"])  # fmt: skip


def test_good_branch_names_pass() -> None:
    from neuronasv.store.git import branch_problem

    for good in ("gh-pages", "benchmark-results", "site/v1", "a.b", "héllo", "a-b_c"):
        assert branch_problem(good) is None, good


# --- issue 31: the workflow steps call the steps in process ------------------------------

IN_PROCESS = ("ci/flows.py", "ci/bisect_step.py")


def spawns(source: str) -> list[str]:
    """Where ``source`` starts an interpreter or a process runner: ``sys.executable``, a
    ``-m`` argument, or the package's process runners (``neuronasv.proc``)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if (isinstance(node, ast.Attribute) and node.attr == "executable"
                and isinstance(node.value, ast.Name) and node.value.id == "sys"):  # fmt: skip
            found.append(f"{line}: sys.executable")
        elif isinstance(node, ast.Constant) and node.value == "-m":
            found.append(f"{line}: '-m'")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("proc"):
            found.append(f"{line}: import from {node.module}")
        elif isinstance(node, ast.Import) and any(a.name.endswith(".proc") for a in node.names):
            found.append(f"{line}: import proc")
    return found


@pytest.mark.parametrize("rel", IN_PROCESS)
def test_the_chaining_steps_spawn_no_neuronasv_process(rel: str) -> None:
    """``ci/flows.py`` and ``ci/bisect_step.py`` call the step functions; they used to run
    ``python -m neuronasv COMMAND`` about a dozen times (the processes that stay — asv,
    valgrind, confirm's rounds, git — are started by the steps, whoever calls them)."""
    path = Path(__file__).resolve().parents[2] / "neuronasv" / rel
    assert spawns(path.read_text(encoding="utf-8")) == []


def test_the_spawn_check_can_fail() -> None:
    old = (
        "import sys\nfrom neuronasv.proc import stream_process\n"
        "def nx(*args):\n"
        "    return stream_process([sys.executable, '-m', 'neuronasv', *args], on_line=print)\n"
    )
    assert spawns(old) == ["2: import from neuronasv.proc", "4: sys.executable", "4: '-m'"]
