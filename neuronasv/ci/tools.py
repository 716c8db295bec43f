"""What the instructions metric needs on a CPU runner, installed where the runner allows it.

``python -m neuronasv.ci instruction-tools [--metrics LIST]`` (the reusable workflows' bench
jobs, before ``neuronasv run``; the option left out is ``neuronasv run``'s default for the
backend, instructions on the CPU; an empty ``LIST`` is its usage error, exit 2): when the
metrics hold ``instructions`` and valgrind, its callgrind header or a C compiler is missing
(``neuronasv doctor``'s check, :func:`neuronasv.measure.callgrind.valgrind_status`), it
runs ``apt-get install -y valgrind gcc`` — as root, or through ``sudo -n`` (never a
password prompt). A runner without apt-get or passwordless sudo, or an install that fails,
is said in one warning (in Actions
one ``::warning::`` annotation, apt's text escaped by :class:`neuronasv.log.ActionsHandler`)
and the step still succeeds: ``neuronasv run`` then records no instruction series and says so.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
from collections.abc import Callable, Sequence

from neuronasv.proc import ProcResult, run_process

__all__ = ["ensure_instruction_tools", "privileged_prefix", "wanted_metrics"]

PACKAGES = ("valgrind", "gcc")
APT_TIMEOUT_S = 900


def _run(cmd: Sequence[str]) -> ProcResult:
    return run_process(list(cmd), text=True, timeout=APT_TIMEOUT_S)


def privileged_prefix(
    which: Callable[[str], str | None] = shutil.which,
    runner: Callable[[Sequence[str]], ProcResult] = _run,
    uid: int | None = None,
) -> list[str] | None:
    """``[]`` as root, ``["sudo", "-n"]`` where passwordless sudo works, else None."""
    if (os.geteuid() if uid is None else uid) == 0:
        return []
    if which("sudo") is None:
        return None
    return ["sudo", "-n"] if runner(["sudo", "-n", "true"]).returncode == 0 else None


log = logging.getLogger(__name__)


def ensure_instruction_tools(
    metrics: Sequence[str],
    *,
    status: Callable[[], tuple[bool, str]] | None = None,
    which: Callable[[str], str | None] = shutil.which,
    runner: Callable[[Sequence[str]], ProcResult] = _run,
    uid: int | None = None,
) -> bool:
    """Whether the instructions metric is usable here after this step (see the module doc).

    ``status``, ``which``, ``runner`` and ``uid`` are injected by tests; by default
    ``doctor``'s check, ``shutil.which``, the one subprocess runner and this process's uid.
    """
    if "instructions" not in metrics:
        return False
    if status is None:
        from neuronasv.measure.callgrind import valgrind_status

        status = valgrind_status
    usable, line = status()
    if usable:
        log.info(f"instructions metric: {line}")
        return True
    prefix = privileged_prefix(which, runner, uid) if which("apt-get") else None
    if prefix is None:
        log.warning(f"instructions metric off: {line}; no apt-get or passwordless sudo"
              f" here to install {' and '.join(PACKAGES)} (docs/instructions.md)")  # fmt: skip
        return False
    for cmd in ([*prefix, "apt-get", "update", "-q"],
                [*prefix, "apt-get", "install", "-y", "-q", *PACKAGES]):  # fmt: skip
        res = runner(cmd)
        if res.returncode != 0:
            last = (res.output.strip().splitlines() or [""])[-1][:200]
            log.warning(f"instructions metric off: `{' '.join(cmd)}` exited"
                  f" {res.returncode}{': ' + last if last else ''}")  # fmt: skip
            return False
    usable, line = status()
    if usable:
        log.info(f"instructions metric: {line}")
    else:
        log.warning(f"instructions metric off: {line}")
    return usable


def wanted_metrics(
    metrics_text: str | None, backend: Callable[[], str] | None = None
) -> tuple[str, ...]:
    """``--metrics`` parsed as ``neuronasv run`` does (an empty list is its error: exit 2);
    None (not given): what ``neuronasv run`` would measure by default on this runner's
    backend (``NEURONASV_BACKEND``), before valgrind is installed
    (:func:`neuronasv.run.instrrun.default_metrics`)."""
    from neuronasv.errors import UsageError
    from neuronasv.run.instrrun import default_metrics, parse_metrics

    if metrics_text is not None:
        try:
            return parse_metrics(metrics_text)
        except ValueError as exc:
            raise UsageError(f"--metrics: {exc}") from None
    if backend is None:

        def backend() -> str:
            from neuronasv import env
            from neuronasv.measure.backends import get_backend

            return get_backend(env.BACKEND.read()).name

    return default_metrics(backend(), status=lambda: (True, ""), announce=False)


def main(metrics_text: str | None) -> int:
    """The step: the metrics ``neuronasv run`` will be asked for (or its default); valgrind
    and gcc when they hold instructions; always exit 0 once parsed."""
    ensure_instruction_tools(wanted_metrics(metrics_text))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``instruction-tools`` step's arguments (``python -m neuronasv.ci``)."""
    p = sub.add_parser("instruction-tools", help="valgrind and gcc when --metrics asks")
    p.add_argument("--metrics", default=None,
                   help="what `neuronasv run --metrics` gets (left out: its default; the"
                   " workflows pass it only when their input is set)")  # fmt: skip
    p.set_defaults(func=lambda args: main(args.metrics))
