"""The one subprocess runner: timeouts, and the whole process group killed on the way out.

Shape after asv's ``asv.util.check_output``: every child starts in a session of its own
(``start_new_session``), so a timeout, an idle watchdog or a Ctrl-C in this process kills
the child *and everything it started* (asv's benchmark processes, a torch compile worker)
with one ``killpg``, and nothing is left running after ``neuronasv`` returns. A Ctrl-C
reaches this process only (the child is in another process group); :func:`run_process`
and :func:`stream_process` kill the group, wait for it, and re-raise
``KeyboardInterrupt``, which the CLI turns into exit 130.

Two ways to run:

* :func:`run_process` — capture stdout and stderr (bytes or text), with a wall-clock
  ``timeout``; a command that runs past it is killed and reported as exit 124 (as
  ``timeout(1)`` does), never as an exception.
* :func:`stream_process` — stdout and stderr merged, each line handed to ``on_line`` as it
  comes (asv's progress); ``idle_timeout`` kills a command that prints nothing for that long
  (its status is then negative, the signal's number).

Nothing else in ``neuronasv`` imports :mod:`subprocess` (tested).

A third way, for work that must start from this process's state rather than a new one:
:func:`fork_each` runs callables in forked children, a few at a time (the callgrind pass
counts each configuration from the same state, two at once: :mod:`neuronasv.run.instrpass`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "TIMED_OUT",
    "ProcResult",
    "fork_each",
    "kill_group",
    "run_process",
    "stream_process",
]

#: The exit status reported for a command stopped at its ``timeout`` (``timeout(1)``'s).
TIMED_OUT = 124


@dataclass(frozen=True)
class ProcResult:
    """Outcome of :func:`run_process` (``stdout``/``stderr`` as ``bytes`` unless ``text``)."""

    returncode: int
    stdout: bytes | str
    stderr: bytes | str
    timed_out: bool = False

    @property
    def output(self) -> str:
        """stdout then stderr, as text."""
        parts = (self.stdout, self.stderr)
        return "".join(p if isinstance(p, str) else p.decode("utf-8", "replace") for p in parts)


def kill_group(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """Kill ``proc`` and every process of its group (best effort), then reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            with contextlib.suppress(OSError):
                proc.kill()
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        proc.wait(timeout=30)


def run_process(
    cmd: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    timeout: float | None = None,
    text: bool = False,
) -> ProcResult:
    """Run ``cmd`` to the end, capturing its output; see the module docstring.

    Raises:
        OSError: the command cannot start (not found, not executable, no such ``cwd``).
        KeyboardInterrupt: after the child's process group is killed.
    """
    proc = subprocess.Popen(
        list(cmd),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = _drain(proc)
        return _result(TIMED_OUT, out, err, text, timed_out=True)
    except BaseException:
        kill_group(proc)
        raise
    return _result(proc.returncode, out, err, text)


def _drain(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    try:
        return proc.communicate(timeout=5)
    except (subprocess.SubprocessError, OSError, ValueError):
        return b"", b""


def _result(rc: int, out: bytes, err: bytes, text: bool, *, timed_out: bool = False) -> ProcResult:
    if text:
        return ProcResult(
            rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), timed_out
        )
    return ProcResult(rc, out, err, timed_out)


def stream_process(
    cmd: Sequence[str],
    *,
    on_line: Callable[[str], None],
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    idle_timeout: float | None = None,
) -> int:
    """Run ``cmd``, handing each output line (stderr merged, newline stripped) to ``on_line``.

    Returns the exit status; negative when killed by a signal (the idle watchdog's kill
    is ``-SIGKILL``).

    Raises:
        OSError: the command cannot start.
        KeyboardInterrupt: after the child's process group is killed.
    """
    proc = subprocess.Popen(
        list(cmd),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
        start_new_session=True,
    )
    last = [time.monotonic()]
    done = threading.Event()

    def watchdog(limit: float) -> None:
        while not done.wait(min(1.0, limit)):
            if time.monotonic() - last[0] > limit:
                kill_group(proc)
                return

    if idle_timeout is not None:
        threading.Thread(target=watchdog, args=(idle_timeout,), daemon=True).start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            last[0] = time.monotonic()
            on_line(line.rstrip("\r\n"))
        return proc.wait()
    except BaseException:
        kill_group(proc)
        raise
    finally:
        done.set()
        if proc.stdout is not None:
            proc.stdout.close()


def fork_each(
    tasks: Sequence[Callable[[], None]],
    *,
    jobs: int,
    on_start: Callable[[int], None] | None = None,
    on_done: Callable[[int, int], None],
) -> None:
    """Run each task in a child forked from this process, at most ``jobs`` at once.

    A child starts as a copy of this process as it is when the task starts (its memory,
    its heap, its open files), runs the task and ends with ``os._exit``: nothing of the
    parent's exit handlers or buffers runs twice. ``on_done(index, status)`` is called in
    this process as each child ends: 0 when its task returned, 1 when it raised (the
    traceback went to the child's stderr), negative when a signal killed it. POSIX only.

    Raises:
        KeyboardInterrupt (or any error of ``on_done``): after every running child is killed
        and reaped.
    """
    running: dict[int, int] = {}

    def reap() -> None:
        pid, status = os.wait()
        index = running.pop(pid, None)
        if index is not None:
            on_done(index, os.waitstatus_to_exitcode(status))

    try:
        for index, task in enumerate(tasks):
            while len(running) >= max(1, jobs):
                reap()
            if on_start is not None:
                on_start(index)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child's path ends in os._exit
                _run_child(task)
            running[pid] = index
        while running:
            reap()
    except BaseException:
        for pid in running:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in running:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        raise


def _run_child(task: Callable[[], None]) -> None:  # pragma: no cover - runs in the child
    code = 0
    try:
        task()
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
