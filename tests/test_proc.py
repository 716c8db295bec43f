"""The one subprocess runner: a timeout or a Ctrl-C kills the child's whole process group."""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from neuronasv.proc import TIMED_OUT, fork_each, run_process, stream_process

# A child that starts a grandchild (as asv starts benchmark processes), says its pid, and
# waits: only a process-group kill ends the grandchild too.
FAMILY = (
    "import subprocess, sys, time\n"
    "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "print(g.pid, flush=True)\n"
    "time.sleep(60)\n"
)


def _dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A killed grandchild is a zombie until init reaps it: dead all the same.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


def _gone(pid: int) -> bool:
    """Whether ``pid`` is dead, allowing the kernel up to 10 s to finish a SIGKILL's exit."""
    deadline = time.monotonic() + 10
    while not _dead(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_run_process_captures_and_reports_the_exit_status() -> None:
    res = run_process([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"], text=True)
    assert (res.returncode, res.stdout, res.timed_out) == (3, "out\n", False)
    res = run_process([sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read())"],
                      input=b"abc")  # fmt: skip
    assert res.stdout == b"abc"


def test_a_timeout_is_exit_124_and_kills_the_grandchildren() -> None:
    res = run_process([sys.executable, "-c", FAMILY], timeout=5, text=True)
    assert res.timed_out and res.returncode == TIMED_OUT
    grandchild = int(str(res.stdout).split()[0])
    assert _gone(grandchild)


def test_ctrl_c_while_streaming_kills_the_group_and_propagates() -> None:
    pids: list[int] = []

    def on_line(line: str) -> None:
        pids.append(int(line))
        raise KeyboardInterrupt  # what a Ctrl-C in this process looks like mid-stream

    with pytest.raises(KeyboardInterrupt):
        stream_process([sys.executable, "-c", FAMILY], on_line=on_line)
    assert pids and _gone(pids[0])


def test_the_idle_watchdog_kills_a_silent_command() -> None:
    # The watchdog counts silence from the start: the child's interpreter start-up and its
    # grandchild's spawn come before the first line. 4 s holds at load 8 on 2 cores (a
    # start-up there takes up to ~1 s); 1 s did not.
    lines: list[str] = []
    rc = stream_process([sys.executable, "-c", FAMILY], on_line=lines.append, idle_timeout=4)
    assert rc < 0 and lines and _gone(int(lines[0]))


def test_a_missing_program_is_an_oserror() -> None:
    with pytest.raises(OSError):
        run_process(["/nonexistent/program"])


def test_sigterm_unwinds_a_command_like_ctrl_c() -> None:
    """A cancelled CI job's SIGTERM runs the same clean-up as Ctrl-C (exit 130)."""
    import signal

    from neuronasv.cli import _terminate_as_interrupt

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), _terminate_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is before


def test_fork_each_runs_each_task_in_a_child_of_this_state_a_few_at_once(
    tmp_path: Path,
) -> None:
    state = {"value": "parent's"}
    live = tmp_path / "live"
    live.mkdir()

    def task(i: int) -> None:
        mark = live / str(os.getpid())
        mark.touch()  # at most `jobs` marks at once
        time.sleep(0.2)
        (tmp_path / f"{i}.out").write_text(f"{state['value']} {len(list(live.iterdir()))}")
        mark.unlink()
        state["value"] = "changed in the child"  # never seen by the parent
        if i == 1:
            raise ValueError("task 1 fails")
        if i == 2:
            os.kill(os.getpid(), signal.SIGKILL)

    ended: dict[int, int] = {}
    starts: list[int] = []
    fork_each([functools.partial(task, i) for i in range(5)], jobs=2, on_start=starts.append,
              on_done=ended.__setitem__)  # fmt: skip
    assert starts == [0, 1, 2, 3, 4]
    assert ended == {0: 0, 1: 1, 2: -signal.SIGKILL, 3: 0, 4: 0}
    assert state["value"] == "parent's"
    for i in (0, 1, 3, 4):
        seen, running = (tmp_path / f"{i}.out").read_text().split()
        assert seen == "parent's" and 1 <= int(running) <= 2


def test_fork_each_kills_the_running_children_when_interrupted() -> None:
    r, w = os.pipe()
    pids: list[int] = []

    def sleeper() -> None:
        os.write(w, os.getpid().to_bytes(8, "little"))
        time.sleep(60)

    def done(_i: int, _status: int) -> None:
        raise AssertionError("no child ends on its own")

    def started(i: int) -> None:
        if i == 2:  # two children are running: interrupt as Ctrl-C would
            pids.extend(int.from_bytes(os.read(r, 8), "little") for _ in range(2))
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fork_each([sleeper] * 3, jobs=3, on_start=started, on_done=done)
    os.close(r)
    os.close(w)
    assert len(pids) == 2 and all(_gone(p) for p in pids)  # killed and reaped
