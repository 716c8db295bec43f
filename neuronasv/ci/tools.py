"""What a metric's collector needs on a runner, installed where the runner allows it.

``python -m neuronasv.ci metric-tools [--metrics LIST]`` (the reusable workflows' bench
jobs, before ``neuronasv run``; its older name, a metric's ``tools_alias`` in
:mod:`neuronasv.metrics`, is still accepted; the option left out is ``neuronasv run``'s
default for the backend; an empty ``LIST`` is its usage error, exit 2): when the metrics
hold one with ``tools`` (the registry's: valgrind and gcc for the metrics valgrind's
callgrind pass counts, on the CPU) and valgrind, its callgrind header or a C compiler is
missing (``neuronasv doctor``'s check, :func:`neuronasv.measure.callgrind.valgrind_status`),
it runs ``apt-get install -y <tools>`` — as root, or through ``sudo -n`` (never a password
prompt). A runner without apt-get or passwordless sudo, or an install that fails, is said
in one warning (in Actions one ``::warning::`` annotation, apt's text escaped by
:class:`neuronasv.log.ActionsHandler`) and the step still succeeds: ``neuronasv run`` then
records no series of that metric and says so.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
from collections.abc import Callable, Sequence

from neuronasv.metrics import by_name, tools_aliases
from neuronasv.proc import ProcResult, run_process

__all__ = ["STEP", "ensure_metric_tools", "privileged_prefix", "wanted_metrics"]

#: The step's name (``python -m neuronasv.ci metric-tools``).
STEP = "metric-tools"
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


def ensure_metric_tools(
    metrics: Sequence[str],
    *,
    status: Callable[[], tuple[bool, str]] | None = None,
    which: Callable[[str], str | None] = shutil.which,
    runner: Callable[[Sequence[str]], ProcResult] = _run,
    uid: int | None = None,
) -> bool:
    """Whether the metrics of ``metrics`` that need tools (``Metric.tools``) are usable here
    after this step (see the module doc); False when none needs any.

    ``status``, ``which``, ``runner`` and ``uid`` are injected by tests; by default
    ``doctor``'s check, ``shutil.which``, the one subprocess runner and this process's uid.
    """
    needing = [m for m in map(by_name, dict.fromkeys(metrics)) if m.tools]
    if not needing:
        return False
    what = f"{', '.join(m.name for m in needing)} metric"
    packages = tuple(dict.fromkeys(t for m in needing for t in m.tools))
    if status is None:
        from neuronasv.measure.callgrind import valgrind_status

        status = valgrind_status
    usable, line = status()
    if usable:
        log.info(f"{what}: {line}")
        return True
    prefix = privileged_prefix(which, runner, uid) if which("apt-get") else None
    if prefix is None:
        log.warning(f"{what} off: {line}; no apt-get or passwordless sudo"
              f" here to install {' and '.join(packages)} (docs/metrics.md)")  # fmt: skip
        return False
    for cmd in ([*prefix, "apt-get", "update", "-q"],
                [*prefix, "apt-get", "install", "-y", "-q", *packages]):  # fmt: skip
        res = runner(cmd)
        if res.returncode != 0:
            last = (res.output.strip().splitlines() or [""])[-1][:200]
            log.warning(f"{what} off: `{' '.join(cmd)}` exited"
                  f" {res.returncode}{': ' + last if last else ''}")  # fmt: skip
            return False
    usable, line = status()
    if usable:
        log.info(f"{what}: {line}")
    else:
        log.warning(f"{what} off: {line}")
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
    """The step: the metrics ``neuronasv run`` will be asked for (or its default); their
    tools when one needs any; always exit 0 once parsed."""
    ensure_metric_tools(wanted_metrics(metrics_text))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The :data:`STEP` step's arguments (``python -m neuronasv.ci``), also under its older
    names (:func:`neuronasv.metrics.tools_aliases`)."""
    p = sub.add_parser(STEP, aliases=list(tools_aliases()),
                       help="a metric's tools (valgrind, gcc) when --metrics asks")  # fmt: skip
    p.add_argument("--metrics", default=None,
                   help="what `neuronasv run --metrics` gets (left out: its default; the"
                   " workflows pass it only when their input is set)")  # fmt: skip
    p.set_defaults(func=lambda args: main(args.metrics))
