"""The one exception tree of neuronasv.

Every error the package raises on purpose derives from :class:`NeuronasvError`; the CLI
catches that base class, prints ``error: <message>`` (plus ``hint: ...`` when the
exception carries one) and exits with the exception's ``exit_code``. Anything else that
escapes is a bug and keeps its traceback.

Tree::

    NeuronasvError                 exit 2   base class; carries an optional ``hint``
    ├── UsageError                 exit 2   bad command-line arguments or configuration
    ├── BackendUnavailable         exit 3   the requested backend cannot run here
    │                                       (no GPU, torch_neuronx missing or the PyPI stub)
    ├── CaptureError               exit 4   the profiler captured nothing usable: empty
    │   │                                   capture, device time 0 on an accelerator
    │   └── CalibrationRefused              a CPU roof measured under load, unsteady or
    │                                       out of a CPU's bounds: not stored
    ├── ResultsError               exit 5   results on disk are unreadable
    │   ├── CorruptResultsError             truncated / invalid JSON, NaN where a number
    │   │                                   is required, wrong types
    │   └── SchemaVersionError              a schema version this code does not know
    ├── IncomparableError          exit 6   base and head differ in machine, backend or
    │                                       device model (``--force`` overrides)
    ├── StoreError                 exit 7   git / results-branch failures (push retries
    │                                       exhausted, not a git repo, ...)
    ├── GitHubError                exit 8   GitHub API failures
    │   ├── GitHubPermissionError           403 without rate-limit signals: token lacks
    │   │                                   a permission (hint names ``permissions:``)
    │   └── GitHubRateLimitError            rate limit still exhausted after bounded waits
    ├── UntrustedArtifactError     exit 9   the privileged PR-comment step refused a PR
    │                                       artifact (invalid, or bound to another PR or
    │                                       commit); nothing was posted
    ├── VerdictsWithheld           exit 10  ``--fail-on`` given but the verdicts were
    │                                       withheld: the device's canary ran slower than
    │                                       its machine's history (re-run on a healthy device)
    ├── NothingToBisect            exit 12  ``neuronasv bisect``: the range's ends do not
    │                                       differ on an exact series (equal counts or
    │                                       work): no commit to find
    └── RegressionFound            exit 1   ``--fail-on`` matched a confirmed regression
                                            (not a failure of the tool itself)

Exit codes 0 (success) and 1 (a regression under ``--fail-on``) are the ones CI scripts
branch on; 2-10 mean the tool could not do its job; 12 says a bisection had nothing to
find (the tool worked; the range's ends do not differ). An exception outside this tree is a
bug: the CLI reports it in one line and exits :data:`INTERNAL_ERROR_EXIT` (11), never 1.
"""

from __future__ import annotations

__all__ = [
    "EXIT_CODES",
    "INTERNAL_ERROR_EXIT",
    "BackendUnavailable",
    "CalibrationRefused",
    "CaptureError",
    "CorruptResultsError",
    "GitHubError",
    "GitHubPermissionError",
    "GitHubRateLimitError",
    "IncomparableError",
    "NeuronasvError",
    "NothingToBisect",
    "RegressionFound",
    "ResultsError",
    "SchemaVersionError",
    "StoreError",
    "UntrustedArtifactError",
    "UsageError",
    "VerdictsWithheld",
    "exit_codes_line",
]


#: Exit code of an unexpected exception (a bug), distinct from every documented failure.
INTERNAL_ERROR_EXIT = 11

#: The one table of exit codes: code -> (name, what it means). Every command's ``--help``
#: line is made from it (:func:`exit_codes_line`) and the README's table is checked
#: against it (tests/test_exit_table.py).
EXIT_CODES: dict[int, tuple[str, str]] = {
    0: ("ok", "done; regressions may be listed"),
    1: ("check failed", "a row fires the gate under `--fail-on` (per axis: `--fail-on-time`,"
        " `--fail-on-work`), or `init --check` found something to fix; not a failure of the"
        " tool"),
    2: ("usage", "a bad argument, option, file or configuration, or a dependency that cannot"
        " be imported; nothing was done"),
    3: ("backend unavailable", "the requested backend cannot run here"),
    4: ("capture failed", "the profiler captured nothing usable, or a CPU roof was measured"
        " under load (`doctor --calibrate` refused it; nothing stored)"),
    5: ("unreadable results", "results or a document on disk cannot be read (each file named)"),
    6: ("incomparable runs", "base and head differ in machine, backend or device model"
        " (`--force`)"),
    7: ("store failed", "git or the results branch failed"),
    8: ("GitHub refused", "a GitHub API call failed (a permission error names `permissions:`)"),
    9: ("untrusted PR artifact refused", "`python -m neuronasv.ci pr-comment` refused the"
        " artifact; nothing was posted"),
    10: ("verdicts withheld", "`--fail-on` given, but the device's canary ran slower than its"
         " history: no verdict can be trusted (re-run on a healthy device)"),
    11: ("unexpected error", "a bug: one line on stderr (`NEURONASV_TRACEBACK=1` for the"
         " traceback); a crash never exits 1"),
    12: ("nothing to bisect", "`neuronasv bisect`: the range's ends do not differ on an exact"
         " series (equal counts or work); device time whose ends the rounds did not show to"
         " differ is \"undecided between\" them (exit 0); the tool worked"),
    130: ("interrupted", "Ctrl-C or SIGTERM; child processes are killed with it"),
}


def exit_codes_line(codes: dict[int, str | None]) -> str:
    """``Exit codes: 0 ok, 2 usage (note), ...`` for a command's help, from :data:`EXIT_CODES`:
    ``codes`` maps each code the command may return to an optional note; 11 and 130 are
    added (every command can meet a bug or Ctrl-C)."""
    unknown = sorted(set(codes) - set(EXIT_CODES))
    if unknown:
        raise ValueError(f"exit codes {unknown} are not in EXIT_CODES")
    parts = []
    for code in sorted({**codes, INTERNAL_ERROR_EXIT: None, 130: None}):
        note = codes.get(code)
        parts.append(f"{code} {EXIT_CODES[code][0]}" + (f" ({note})" if note else ""))
    return "Exit codes: " + ", ".join(parts) + "."


class NeuronasvError(Exception):
    """Base class of every deliberate neuronasv error.

    Args:
        message: what went wrong, in one sentence a user can act on.
        hint: optional next step ("install torch-neuronx from the Neuron repository").
    """

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(NeuronasvError):
    """Bad arguments or configuration."""

    exit_code = 2


class BackendUnavailable(NeuronasvError):
    """The requested backend cannot run on this machine."""

    exit_code = 3


class CaptureError(NeuronasvError):
    """The profiler captured nothing usable (empty capture, zero device time)."""

    exit_code = 4


class CalibrationRefused(CaptureError):
    """A CPU roof could not be measured honestly (load, spread, implausible): none stored."""


class ResultsError(NeuronasvError):
    """Results on disk cannot be used."""

    exit_code = 5


class CorruptResultsError(ResultsError):
    """A results file is truncated, not JSON, or holds values of the wrong kind."""


class SchemaVersionError(ResultsError):
    """A document declares a schema version this code does not understand."""


class IncomparableError(NeuronasvError):
    """Base and head were measured on different machines, backends or devices."""

    exit_code = 6


class StoreError(NeuronasvError):
    """The git results store failed (push retries exhausted, not a repository, ...)."""

    exit_code = 7


class GitHubError(NeuronasvError):
    """A GitHub API call failed."""

    exit_code = 8


class GitHubPermissionError(GitHubError):
    """403 without rate-limit signals: the token lacks a permission."""


class GitHubRateLimitError(GitHubError):
    """The rate limit stayed exhausted after the bounded waits."""


class UntrustedArtifactError(NeuronasvError):
    """The PR-comment step refused an untrusted PR artifact; nothing was posted."""

    exit_code = 9


class NothingToBisect(NeuronasvError):
    """``neuronasv bisect``: the range's ends do not differ on the series; nothing to find."""

    exit_code = 12


class RegressionFound(NeuronasvError):
    """A confirmed regression matched ``--fail-on``; the tool itself worked."""

    exit_code = 1


class VerdictsWithheld(NeuronasvError):
    """``--fail-on`` was given but the device was unhealthy, so no verdict can be trusted."""

    exit_code = 10
