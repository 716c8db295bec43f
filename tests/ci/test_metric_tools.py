"""The reusable bench jobs' valgrind step (`python -m neuronasv.ci metric-tools`; its older
name `instruction-tools` still accepted).

The decisions are tested with injected `which`/runner/uid (no test installs packages or
runs sudo); the step itself runs for real where nothing needs installing.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence

import pytest

from neuronasv.ci.tools import ensure_metric_tools, privileged_prefix
from neuronasv.log import cli_output
from neuronasv.proc import ProcResult


@pytest.fixture(autouse=True)
def _in_actions() -> Iterator[None]:
    """The step's voice in a workflow: the Actions handler, as ``python -m neuronasv.ci``
    installs it under ``GITHUB_ACTIONS=true`` (annotations on stderr)."""
    with cli_output(actions=True, environ={"GITHUB_ACTIONS": "true"}):
        yield


class Runner:
    """Records commands; answers each with the status its first matching word says."""

    def __init__(self, fail: str = "") -> None:
        self.fail = fail
        self.calls: list[list[str]] = []

    def __call__(self, cmd: Sequence[str]) -> ProcResult:
        self.calls.append(list(cmd))
        bad = bool(self.fail) and self.fail in cmd
        return ProcResult(100 if bad else 0, "", "E: Unable to locate package" if bad else "")


def which(*present: str):  # type: ignore[no-untyped-def]
    return lambda name: f"/usr/bin/{name}" if name in present else None


def states(*usable: bool):  # type: ignore[no-untyped-def]
    """doctor's check answering ``usable`` in turn (before and after an install)."""
    answers = iter(usable)

    def status() -> tuple[bool, str]:
        ok = next(answers)
        return ok, "valgrind 3.19.0: usable" if ok else "not installed (apt-get install valgrind)"

    return status


def test_nothing_happens_without_a_metric_that_needs_tools() -> None:
    run = Runner()
    assert ensure_metric_tools(("devtime",), status=states(), runner=run) is False
    assert run.calls == []


def test_already_usable_installs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    run = Runner()
    assert ensure_metric_tools(("devtime", "instructions"), status=states(True),
                                    which=which("apt-get"), runner=run, uid=1000)  # fmt: skip
    assert run.calls == []
    assert "::warning::" not in capsys.readouterr().err


@pytest.mark.parametrize("uid, prefix", [(0, []), (1000, ["sudo", "-n"])])
def test_apt_get_as_root_or_through_passwordless_sudo(uid: int, prefix: list[str]) -> None:
    run = Runner()
    ok = ensure_metric_tools(
        ("devtime", "instructions"),
        status=states(False, True),
        which=which("apt-get", "sudo"),
        runner=run,
        uid=uid,
    )
    assert ok is True
    calls = [c for c in run.calls if c[-1] != "true"]
    assert calls == [
        [*prefix, "apt-get", "update", "-q"],
        [*prefix, "apt-get", "install", "-y", "-q", "valgrind", "gcc"],
    ]


@pytest.mark.parametrize(
    ("present", "fail", "said"),
    [
        (("sudo",), "", "no apt-get or passwordless sudo"),  # not Debian
        (("apt-get",), "", "no apt-get or passwordless sudo"),  # no sudo at all
        (("apt-get", "sudo"), "true", "no apt-get or passwordless sudo"),  # sudo asks
        (("apt-get", "sudo"), "install", "exited 100: E: Unable to locate package"),
    ],
)
def test_a_runner_that_cannot_install_warns_and_goes_on(
    present: tuple[str, ...], fail: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = Runner(fail)
    ok = ensure_metric_tools(
        ("devtime", "instructions"),
        status=states(False, False),
        which=which(*present),
        runner=run,
        uid=1000,
    )
    out = capsys.readouterr().err
    assert ok is False and out.startswith("::warning::instructions metric off: ") and said in out
    assert out.count("\n") == 1  # one annotation line


def test_privileged_prefix_never_prompts() -> None:
    run = Runner()
    assert privileged_prefix(which("sudo"), run, uid=1000) == ["sudo", "-n"]
    assert run.calls == [["sudo", "-n", "true"]]


def test_the_step_parses_metrics_as_run_does() -> None:
    def step(metrics: str, name: str = "metric-tools") -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "neuronasv.ci", name,
                               "--metrics", metrics], capture_output=True, text=True,
                              check=False, timeout=120)  # fmt: skip

    ok = step("devtime")
    assert ok.returncode == 0 and ok.stdout == "", ok.stderr
    # the older name, from when the step served one metric, is the same step
    old = step("devtime", "instruction-tools")
    assert old.returncode == 0 and old.stdout == "", old.stderr
    assert step("devtime,cycles", "instruction-tools").returncode == 2
    bad = step("devtime,cycles")
    assert bad.returncode == 2 and "unknown metric cycles" in bad.stderr
    assert "Traceback" not in bad.stderr
    # issue 38 item 5: an empty list is neuronasv run's usage error, never "the default"
    # (it ran apt-get); the default is the option left out (the workflows' ${METRICS:+...})
    for empty in ("", " ", ","):
        none = step(empty)
        assert none.returncode == 2 and "--metrics" in none.stderr, none.stderr


def test_the_runners_text_is_escaped_in_the_annotation(capsys: pytest.CaptureFixture[str]) -> None:
    """apt's last line and valgrind's status are the runner's text: a `%`, a CR or a newline
    in them must not end the annotation or start another workflow command."""

    class Hostile(Runner):
        def __call__(self, cmd: Sequence[str]) -> ProcResult:
            self.calls.append(list(cmd))
            return ProcResult(100, "E: 100%0A::error::pwned", "")

    def status() -> tuple[bool, str]:
        return False, "not installed\n::error::from the status"

    ok = ensure_metric_tools(("instructions",), status=status, which=which("apt-get"),
                                  runner=Hostile(), uid=0)  # fmt: skip
    out = capsys.readouterr().err
    assert ok is False and out.count("\n") == 1 and "\r" not in out
    assert out.startswith("::warning::instructions metric off: ")
    assert out.endswith("exited 100: E: 100%250A::error::pwned\n")
    ok = ensure_metric_tools(("instructions",), status=status, which=which(), uid=0)
    out = capsys.readouterr().err
    assert ok is False and out.count("\n") == 1 and "installed%0A::error::from" in out



def test_the_older_step_name_is_the_same_step_in_one_parser() -> None:
    """``instruction-tools`` (workflows pinned to an older neuronasv call it) parses to the
    same step as ``metric-tools``: the alias comes from the registry's ``tools_alias``."""
    from neuronasv.ci.__main__ import build_parser
    from neuronasv.metrics import tools_aliases

    assert tools_aliases() == ("instruction-tools",)
    ap = build_parser()
    new = ap.parse_args(["metric-tools", "--metrics", "devtime"])
    old = ap.parse_args(["instruction-tools", "--metrics", "devtime"])
    assert new.func.__code__ is old.func.__code__ and new.metrics == old.metrics == "devtime"


def test_the_tools_are_the_registry_s() -> None:
    """What is installed is the wanted metrics' ``tools``, named in the warning; a metric
    without tools asks for none."""
    from neuronasv.metrics import METRICS

    needing = [m for m in METRICS if m.tools]
    assert needing, "a metric with tools is what this step is for"
    run = Runner()
    ok = ensure_metric_tools(
        tuple(m.name for m in METRICS), status=states(False, True),
        which=which("apt-get"), runner=run, uid=0,
    )  # fmt: skip
    assert ok is True
    assert run.calls[-1][-len(needing[0].tools):] == list(needing[0].tools)
    assert ensure_metric_tools(
        tuple(m.name for m in METRICS if not m.tools), status=states(), runner=run
    ) is False
