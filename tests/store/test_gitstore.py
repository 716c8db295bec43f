"""The results branch store against real git and a local bare remote."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from neuronasv.errors import StoreError
from neuronasv.store.git import GitResult, SubprocessGit
from neuronasv.store.gitstore import (
    ResultsStore,
    collect_result_files,
    result_commit_prefix,
)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    env = {**os.environ, **GIT_ENV}
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=env, input=input, capture_output=True, check=True
    )
    return out.stdout.decode()


@pytest.fixture()
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--bare", "-q", "-b", "main", str(bare)], check=True)
    return bare


def clone(remote: Path, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(remote), str(dest)], check=True,
                   capture_output=True)
    return dest


def no_sleep(_seconds: float) -> None:
    """Injected sleeper: never waits on the wall clock."""


def branch_files(remote: Path, branch: str = "benchmark-results") -> dict[str, bytes]:
    names = git(remote, "ls-tree", "-r", "--name-only", branch).split()
    return {n: subprocess.run(["git", "show", f"{branch}:{n}"], cwd=remote,
                              capture_output=True, check=True).stdout for n in names}


def store(repo: Path, remote: Path, **kw: object) -> ResultsStore:
    return ResultsStore(repo, remote=str(remote), sleep=no_sleep, env=GIT_ENV, **kw)  # type: ignore[arg-type]


def test_first_write_creates_branch_and_leaves_checkout_untouched(
    tmp_path: Path, remote: Path
) -> None:
    work = clone(remote, tmp_path / "work")
    (work / "code.py").write_text("x = 1\n")
    git(work, "add", "code.py")
    git(work, "commit", "-q", "-m", "code")
    (work / "code.py").write_text("x = 2  # dirty, unstaged\n")
    (work / "staged.txt").write_text("staged\n")
    git(work, "add", "staged.txt")
    before = (git(work, "status", "--porcelain"), git(work, "rev-parse", "HEAD"),
              git(work, "symbolic-ref", "HEAD"))

    rep = store(work, remote).write(
        {"m1/abcd1234-py.json": b'{"a": 1}\n', "m1/machine.json": b"{}\n"}, "results m1"
    )

    assert rep.changed and rep.attempts == 1
    assert branch_files(remote) == {"m1/abcd1234-py.json": b'{"a": 1}\n',
                                    "m1/machine.json": b"{}\n"}
    after = (git(work, "status", "--porcelain"), git(work, "rev-parse", "HEAD"),
             git(work, "symbolic-ref", "HEAD"))
    assert after == before
    assert git(work, "for-each-ref", "refs/neuronasv-tmp/") == ""  # no temp ref left behind


def test_rewrite_is_idempotent_and_replaces_own_file(tmp_path: Path, remote: Path) -> None:
    work = clone(remote, tmp_path / "work")
    s = store(work, remote)
    s.write({"m/aaaaaaaa-py.json": b"v1", "m/bbbbbbbb-py.json": b"other"}, "one")
    n_commits = git(remote, "rev-list", "--count", "benchmark-results").strip()

    again = s.write({"m/aaaaaaaa-py.json": b"v1"}, "same again")
    assert not again.changed
    assert git(remote, "rev-list", "--count", "benchmark-results").strip() == n_commits

    rerun = s.write({"m/aaaaaaaa-py.json": b"v2"}, "re-run of the same commit")
    assert rerun.changed
    files = branch_files(remote)
    assert files == {"m/aaaaaaaa-py.json": b"v2", "m/bbbbbbbb-py.json": b"other"}


class RacingGit:
    """A git runner that lets another writer win the race just before our first push."""

    def __init__(self, inner: SubprocessGit, rival: ResultsStore) -> None:
        self.inner = inner
        self.rival = rival
        self.pushes = 0
        self.rejections: list[str] = []

    def __call__(
        self,
        args: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str] | None = None,
        input: bytes | None = None,
    ) -> GitResult:
        if args and args[0] == "push":
            self.pushes += 1
            if self.pushes == 1:
                self.rival.write({"rival/cccccccc-py.json": b"rival"}, "rival wins")
        res = self.inner(args, cwd=cwd, env=env, input=input)
        if args and args[0] == "push" and res.returncode != 0:
            self.rejections.append(res.stderr)
        return res


def test_rejected_push_refetches_reapplies_and_retries(tmp_path: Path, remote: Path) -> None:
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    store(a, remote).write({"base/dddddddd-py.json": b"base"}, "seed the branch")
    rival = store(b, remote)
    racing = RacingGit(SubprocessGit(), rival)
    delays: list[float] = []
    s = ResultsStore(a, remote=str(remote), git=racing, sleep=delays.append, env=GIT_ENV,
                     base_delay=0.5, max_delay=4.0)

    rep = s.write({"mine/eeeeeeee-py.json": b"mine"}, "mine")

    assert rep.attempts == 2 and rep.changed
    assert len(racing.rejections) == 1
    low = racing.rejections[0].lower()
    assert "rejected" in low or "fetch first" in low or "non-fast-forward" in low
    assert len(delays) == 1 and 0.25 <= delays[0] <= 0.5  # first backoff: jittered in [cap/2, cap]
    assert set(branch_files(remote)) == {
        "base/dddddddd-py.json", "rival/cccccccc-py.json", "mine/eeeeeeee-py.json"
    }
    # History is linear: the rival's commit is an ancestor of ours (nothing force-pushed).
    rival_commit = git(
        remote, "log", "--format=%H", "-1", "benchmark-results", "--", "rival"
    ).strip()
    git(remote, "merge-base", "--is-ancestor", rival_commit, "benchmark-results")


def test_retries_are_bounded(tmp_path: Path, remote: Path) -> None:
    a = clone(remote, tmp_path / "a")

    class AlwaysRejected(SubprocessGit):
        def __call__(self, args, *, cwd, env=None, input=None):  # type: ignore[no-untyped-def]
            if args[0] == "push":
                return GitResult(1, b"", " ! [rejected] x -> y (fetch first)\n")
            return super().__call__(args, cwd=cwd, env=env, input=input)

    delays: list[float] = []
    s = ResultsStore(a, remote=str(remote), git=AlwaysRejected(), sleep=delays.append,
                     env=GIT_ENV, max_attempts=4, base_delay=1.0, max_delay=3.0)
    with pytest.raises(StoreError, match="after 4 attempts"):
        s.write({"m/aaaaaaaa-py.json": b"x"}, "x")
    assert len(delays) == 3
    assert delays[2] <= 3.0 and delays[1] >= 1.0  # exponential, capped


def test_non_retryable_failure_is_reported_at_once(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    git(work, "init", "-q")
    s = ResultsStore(work, remote=str(tmp_path / "no-such-remote.git"), sleep=no_sleep,
                     env=GIT_ENV)
    with pytest.raises(StoreError, match="cannot fetch"):
        s.write({"m/aaaaaaaa-py.json": b"x"}, "x")


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_eight_concurrent_writers_keep_all_results(tmp_path: Path, remote: Path) -> None:
    seed = clone(remote, tmp_path / "seed")
    store(seed, remote).write({"benchmarks.json": b"{}"}, "seed")
    writers = [clone(remote, tmp_path / f"w{i}") for i in range(8)]
    barrier = threading.Barrier(8)
    reports: list[object] = [None] * 8
    errors: list[BaseException] = []

    def work(i: int) -> None:
        s = ResultsStore(writers[i], remote=str(remote), sleep=lambda _s: None, env=GIT_ENV,
                         max_attempts=60, base_delay=0.001, max_delay=0.01)
        barrier.wait()
        try:
            reports[i] = s.write(
                {f"runner{i}/{i:08x}-py.json": f'{{"writer": {i}}}'.encode(),
                 f"runner{i}/{i:08x}-py.neuronasv": b"{}",
                 "benchmarks.json": b"{}"},
                f"writer {i}",
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert not errors, errors
    files = branch_files(remote)
    for i in range(8):
        assert files[f"runner{i}/{i:08x}-py.json"] == f'{{"writer": {i}}}'.encode()
        assert f"runner{i}/{i:08x}-py.neuronasv" in files
    assert len(files) == 17
    # 1 seed + 8 writers, one linear chain: every writer's commit is on the branch.
    assert git(remote, "rev-list", "--count", "benchmark-results").strip() == "9"
    for rep in reports:
        git(remote, "merge-base", "--is-ancestor", rep.commit, "benchmark-results")  # type: ignore[attr-defined]


def test_pull_list_and_missing(tmp_path: Path, remote: Path) -> None:
    work = clone(remote, tmp_path / "work")
    s = store(work, remote)
    with pytest.raises(StoreError, match="does not exist"):
        s.pull(tmp_path / "out")
    assert s.list_files() == []
    s.write({"m/aaaaaaaa-py.json": b"A", "m/aaaaaaaa-py.neuronasv": b"S",
             "other/bbbbbbbb-py.json": b"B", "benchmarks.json": b"{}"}, "x")
    out = tmp_path / "out"
    (out / "m").mkdir(parents=True)
    (out / "m" / "local-only.json").write_text("kept")
    rep = s.pull(out, machine="m")
    assert sorted(rep.written) == [
        "benchmarks.json", "m/aaaaaaaa-py.json", "m/aaaaaaaa-py.neuronasv"
    ]
    assert s.pull(out, machine="m").unchanged == rep.written  # a second pull writes nothing
    assert (out / "m" / "aaaaaaaa-py.json").read_bytes() == b"A"
    assert (out / "m" / "local-only.json").read_text() == "kept"
    assert not (out / "other").exists()
    full = "aaaaaaaa" + "0" * 32
    other = "cccccccc" + "1" * 32
    assert s.missing_commits([full, other], "m") == [other]
    assert s.missing_commits([full], "nobody") == [full]


def test_collect_result_files_selects_layout(tmp_path: Path) -> None:
    root = tmp_path / "results"
    (root / "m").mkdir(parents=True)
    for name in ("machine.json", "aaaaaaaa-py.json", "aaaaaaaa-py.neuronasv",
                 "bbbbbbbb-py.json", "notes.txt"):
        (root / "m" / name).write_text("x")
    (root / "benchmarks.json").write_text("{}")
    (root / "m" / "traces").mkdir()
    got = collect_result_files(root, commits=["aaaaaaaa1234"])
    assert sorted(got) == ["benchmarks.json", "m/aaaaaaaa-py.json", "m/aaaaaaaa-py.neuronasv",
                           "m/machine.json"]
    assert len(collect_result_files(root)) == 5
    assert result_commit_prefix("m/bbbbbbbb-existing-py3.11.json") == "bbbbbbbb"
    with pytest.raises(StoreError, match="not a commit hash"):
        collect_result_files(root, commits=["xyz"])


@pytest.mark.parametrize("bad", ["../evil.json", "/abs.json", "a/../../b", "a\nb"])
def test_unsafe_paths_refused(tmp_path: Path, remote: Path, bad: str) -> None:
    work = clone(remote, tmp_path / "work")
    with pytest.raises(StoreError, match=r"unsafe|control"):
        store(work, remote).write({bad: b"x"}, "x")


def test_credentials_are_redacted_from_errors(tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    git(work, "init", "-q")
    s = ResultsStore(work, remote="https://user:s3cr3t-token@127.0.0.1:9/x.git",
                     sleep=no_sleep, env=GIT_ENV, max_attempts=2)
    with pytest.raises(StoreError) as info:
        s.write({"m/aaaaaaaa-py.json": b"x"}, "x")
    assert "s3cr3t-token" not in str(info.value)


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    import sys

    full = {**os.environ, **GIT_ENV, **(env or {})}
    return subprocess.run([sys.executable, "-m", "neuronasv", "store", *args], cwd=cwd,
                          env=full, input=stdin, capture_output=True, text=True, check=False)


def asv_result(commit: str, value: float = 1.0, machine: str = "m1") -> str:
    """A minimal results file both neuronasv's loader and asv's ``Results.load`` read."""
    doc = {
        "version": 2, "commit_hash": commit, "env_name": "existing-py", "date": 1700000000000,
        "params": {"machine": machine}, "python": "3.11", "requirements": {},
        "result_columns": ["result", "params", "version"],
        "results": {"b.time_x": [[value], [], "v1"]}, "durations": {},
    }  # fmt: skip
    import json

    return json.dumps(doc)


def sidecar(commit: str, machine: str = "m1") -> str:
    from neuronasv.model import RunSidecar

    return RunSidecar(machine=machine, commit_hash=commit, env_name="existing-py").dumps()


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_store_cli_push_pull_missing(tmp_path: Path, remote: Path) -> None:
    work = clone(remote, tmp_path / "work")
    results = tmp_path / "results"
    (results / "m1").mkdir(parents=True)
    (results / "benchmarks.json").write_text("{}")
    (results / "m1" / "machine.json").write_text('{"machine": "m1"}')
    commit = "abcdef12" + "0" * 32
    (results / "m1" / "abcdef12-existing-py.json").write_text(asv_result(commit))
    (results / "m1" / "abcdef12-existing-py.neuronasv").write_text(sidecar(commit))

    r = run_cli("push", "--remote", str(remote), "--results-dir", str(results), cwd=work)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("stored: 4 files on benchmark-results at ")
    r = run_cli("push", "--remote", str(remote), "--results-dir", str(results), cwd=work)
    assert r.returncode == 0 and r.stdout.startswith("already stored (no change): 4 files")

    out = tmp_path / "pulled"
    r = run_cli("pull", "--remote", str(remote), "--out", str(out), cwd=work)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"pulled 4 files from benchmark-results into {out}\n"
    assert (out / "m1" / "abcdef12-existing-py.json").read_text() == asv_result(commit)

    have, lack = "abcdef12" + "0" * 32, "12345678" + "0" * 32
    r = run_cli("missing", "--remote", str(remote), "--machine", "m1", cwd=work,
                stdin=f"{have}\n{lack}\n")
    assert r.returncode == 0 and r.stdout == f"{lack}\n"

    r = run_cli("push", "--remote", str(remote), "--results-dir", str(tmp_path / "nope"),
                cwd=work)
    assert r.returncode == 7 and "does not exist" in r.stderr


def test_token_env_goes_to_git_config_env_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import base64

    from neuronasv.errors import UsageError
    from neuronasv.store.gitstore import token_git_env

    monkeypatch.setenv("MY_TOKEN", "ghs_secret")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "2")
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://ghe.example.invalid/")
    env = token_git_env("MY_TOKEN")
    assert env["GIT_CONFIG_COUNT"] == "3"
    assert env["GIT_CONFIG_KEY_2"] == "http.https://ghe.example.invalid/.extraheader"
    value = env["GIT_CONFIG_VALUE_2"]
    assert value.startswith("AUTHORIZATION: basic ") and "ghs_secret" not in value
    assert base64.b64decode(value.split()[-1]) == b"x-access-token:ghs_secret"
    monkeypatch.delenv("MY_TOKEN")
    with pytest.raises(UsageError, match="MY_TOKEN"):
        token_git_env("MY_TOKEN")


@pytest.mark.slow  # end to end through subprocesses: the full lane
def test_push_refuses_truncated_or_corrupt_results(tmp_path: Path, remote: Path) -> None:
    """Each file is parsed as the readers will (ours and asv's) before anything is pushed."""
    work = clone(remote, tmp_path / "work")
    results = tmp_path / "results"
    (results / "m1").mkdir(parents=True)
    good, bad = "abcdef12" + "0" * 32, "12345678" + "0" * 32
    (results / "m1" / "abcdef12-existing-py.json").write_text(asv_result(good))
    cases = {
        "truncated": asv_result(bad)[:60],
        "binary": "\x00\x01\x02",
        "infinity": asv_result(bad).replace("[1.0]", "[Infinity]"),
        "wrong version": asv_result(bad).replace('"version": 2', '"version": 9'),
        "asv cannot read it": asv_result(bad).replace('"python": "3.11", ', ""),
    }
    for what, text in cases.items():
        (results / "m1" / "12345678-existing-py.json").write_text(text)
        r = run_cli("push", "--remote", str(remote), "--results-dir", str(results), cwd=work)
        assert r.returncode == 5, (what, r.stderr)
        assert "12345678-existing-py.json" in r.stderr and "nothing was pushed" in r.stderr
        assert "Traceback" not in r.stderr
        assert git(remote, "branch", "--list", "benchmark-results") == ""
    (results / "m1" / "12345678-existing-py.json").unlink()
    (results / "m1" / "abcdef12-existing-py.neuronasv").write_text('{"kind": "neuronasv.sidecar"')
    r = run_cli("push", "--remote", str(remote), "--results-dir", str(results), cwd=work)
    assert r.returncode == 5 and "abcdef12-existing-py.neuronasv" in r.stderr, r.stderr


def test_pull_never_overwrites_an_unpushed_local_result(tmp_path: Path, remote: Path) -> None:
    """A local file whose content was never pushed is newer: kept. One pushed before (an
    older version of the branch's file) is replaced."""
    work = clone(remote, tmp_path / "work")
    s = store(work, remote)
    c = "abcdef12" + "0" * 32
    path = "m1/abcdef12-existing-py.json"
    s.write({path: asv_result(c, 1.0).encode()}, "v1")
    out = tmp_path / "out"
    assert s.pull(out).written == (path,)
    s.write({path: asv_result(c, 2.0).encode()}, "v2")  # another runner re-measured
    assert s.pull(out).written == (path,)  # the local copy was v1, pushed: replaced
    assert (out / path).read_text() == asv_result(c, 2.0)

    (out / path).write_text(asv_result(c, 3.0))  # measured here, never pushed
    rep = s.pull(out)
    assert rep.kept == (path,) and rep.written == ()
    assert (out / path).read_text() == asv_result(c, 3.0)

    r = run_cli("pull", "--remote", str(remote), "--out", str(out), cwd=work)
    assert r.returncode == 0, r.stderr
    assert "kept local" in r.stderr and "never pushed" in r.stderr
    assert (out / path).read_text() == asv_result(c, 3.0)


def test_bisection_records_travel_with_the_results(tmp_path: Path) -> None:
    """``neuronasv bisect``'s records go on the branch beside the results (not when a push
    is narrowed to some commits), and are found by their name only."""
    from neuronasv.store.layout import bisect_file, is_bisect_name

    root = tmp_path / "results"
    (root / "m").mkdir(parents=True)
    (root / "m" / "aaaaaaaa-py.json").write_text("x")
    rec = bisect_file(str(root), "m", "0123456789abcdef")
    Path(rec).write_text("{}")
    (root / "m" / "bisect-notakey.bisect").write_text("{}")
    assert "m/bisect-0123456789abcdef.bisect" in collect_result_files(root)
    assert "m/bisect-notakey.bisect" not in collect_result_files(root)
    narrowed = collect_result_files(root, commits=["aaaaaaaa"])
    assert "m/bisect-0123456789abcdef.bisect" not in narrowed
    assert is_bisect_name(rec) and not is_bisect_name("bisect-0123.bisect")
    with pytest.raises(ValueError):
        bisect_file(str(root), "m", "../x")
