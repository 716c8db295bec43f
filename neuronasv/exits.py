"""Ending a program in the error tree, whatever went wrong (issue 22: the exit contract).

Every entry point — ``neuronasv`` itself (:func:`neuronasv.cli.run_parsed`), the module
command ``python -m neuronasv.github.issues_sync``, and the workflow steps ``python -m
neuronasv.ci STEP`` — runs its work through
:func:`run_guarded`: a :class:`~neuronasv.errors.NeuronasvError` prints ``error: ...`` (and
``hint: ...``) and exits with its documented code; ``OSError`` (a path that vanished, a
full disk) is ``error: <path>: <reason>`` with exit 2; a dependency that cannot be imported
(a broken environment: a device session once lacked ``importlib-metadata``'s own need) is
``error:`` + ``hint:`` with exit 2; Ctrl-C is 130; anything else is a
bug: one line and :data:`~neuronasv.errors.INTERNAL_ERROR_EXIT` (11), never 1 (which means
"a regression matched --fail-on") and never a traceback unless ``NEURONASV_TRACEBACK=1``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

from neuronasv import env
from neuronasv.errors import INTERNAL_ERROR_EXIT, NeuronasvError
from neuronasv.log import say as _say

__all__ = ["run_guarded", "say"]


def run_guarded(work: Callable[[], int | None], where: str) -> int:
    """``work()``'s exit status, or the error tree's code for whatever it raised.

    Args:
        work: the program's body.
        where: how the bug message names the program (``neuronasv ack``).
    """
    try:
        return int(work() or 0)
    except NeuronasvError as exc:
        say(f"error: {exc.message}")
        if exc.hint:
            say(f"hint: {exc.hint}")
        return exc.exit_code
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except OSError as exc:
        names = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        say(f"error: {names + ': ' if names else ''}{exc.strerror or exc}")
        return 2
    except ImportError as exc:
        if not _ours(exc):  # a dependency broken or missing: the environment, not a bug
            say(f"error: this Python environment cannot import what neuronasv needs: {exc}")
            say("hint: reinstall into it (pip install neuronasv, or the wheel); `python -m pip"
                " check` names what is missing or at the wrong version")
            return 2
        return _bug(exc, where)
    except Exception as exc:  # a bug: say so, with a distinct exit code (never 1)
        return _bug(exc, where)


def _ours(exc: ImportError) -> bool:
    """Whether the failed import is one of neuronasv's own modules (then a bug)."""
    name = exc.name or ""
    return name == "neuronasv" or name.startswith("neuronasv.")


def _bug(exc: BaseException, where: str) -> int:
    if env.TRACEBACK.read():
        say(traceback.format_exc().rstrip())
    text = " ".join(str(exc).split())[:300]
    say(
        f"internal error: {type(exc).__name__}: {text} (in `{where}`; this is a bug,"
        " please report it; NEURONASV_TRACEBACK=1 shows where)"
    )
    return INTERNAL_ERROR_EXIT


def say(line: str) -> None:
    """One line on stderr through the one output path (:func:`neuronasv.log.say`: control
    characters inert, a workflow command fenced under Actions), even when it holds text the
    terminal cannot encode (the program's last word: written whatever handler the
    ``neuronasv`` logger has)."""
    _say(line)
