"""Every ``NEURONASV_*`` environment variable the package reads, declared once.

Each variable is one :class:`EnvVar` here: its name, type, default and a one-line doc,
with a typed reader (``BACKEND.read()``, ``SAMPLES.read()``). No other module reads a
``NEURONASV_*`` variable itself (``tests/test_env.py`` checks: every such name in the
package is declared here, and no module spells one out as a string of its own); modules
that *set* one for a child process (``neuronasv run`` for the asv suite) use ``VAR.name``.
``neuronasv doctor --env`` lists them with their current values (:func:`describe`).
Shaped after HTA's ``hta/configs/env_options.py``: names and readers in one place.

One rule per type, the same for every variable (docs/environment.md):

- surrounding whitespace is ignored, and a variable set to the empty string is unset;
- a *flag* is off when unset or ``0``, ``false``, ``no``, ``off`` (any case), on for any
  other value; a *tri-state flag* is additionally "unset" (the default decides);
- a *list* is a comma list, empty items dropped;
- an *integer* that does not parse, or is below its minimum, is a
  :class:`~neuronasv.errors.UsageError` naming the variable.

Readers read ``os.environ`` at each call (never cached), or the mapping given, so a test
or a caller can pass its own environment. Standard library only: the asv suite imports
this in light benchmark processes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from neuronasv.errors import UsageError

__all__ = [
    "BACKEND",
    "CACHE_KEY",
    "COMPILE_CACHE",
    "CPU_THREADS",
    "DTYPES",
    "HOST_ID",
    "INSTR_DIR",
    "INSTR_PHASES",
    "LARGE",
    "MEMORY",
    "NEURON_MODES",
    "NO_DEVICE_STATE",
    "OPS_CATALOGUE",
    "PEAK",
    "PEAK_FILE",
    "PREFIX",
    "PREPASS_DIR",
    "PROFILE_OUT",
    "QUICK",
    "REPOSITORY",
    "RUN",
    "SAMPLES",
    "SHAPES",
    "SUITE_REPO",
    "TRACEBACK",
    "TRACE_DIR",
    "USER",
    "USER_HOME",
    "VARIABLES",
    "WORKLOADS",
    "Described",
    "EnvVar",
    "Flag",
    "Int",
    "List",
    "Secret",
    "Text",
    "TriFlag",
    "by_name",
    "describe",
]

PREFIX = "NEURONASV_"

T = TypeVar("T")

_OFF = frozenset({"0", "false", "no", "off"})

#: Who sets a variable: the user (or a CI script), or ``neuronasv run`` for the asv suite.
USER = "user"
RUN = "neuronasv run"


@dataclass(frozen=True)
class EnvVar(Generic[T]):
    """One environment variable: name, type, default, one-line doc and its reader."""

    name: str
    default: T
    doc: str
    #: ``user`` or ``neuronasv run`` (set for the asv suite's processes; rarely by hand).
    set_by: str = USER
    #: What the default means when it is not a plain value (``"the host name"``).
    default_text: str | None = None

    kind = "text"

    def raw(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The value as set, stripped; None when unset or empty."""
        env = os.environ if environ is None else environ
        value = env.get(self.name)
        if value is None:
            return None
        value = value.strip()
        return value or None

    def read(self, environ: Mapping[str, str] | None = None) -> T:
        """The typed value (the default when unset).

        Raises:
            UsageError: the value does not parse (names the variable and the value).
        """
        text = self.raw(environ)
        return self.default if text is None else self.parse(text)

    def parse(self, text: str) -> T:
        raise NotImplementedError

    def shown_default(self) -> str:
        if self.default_text is not None:
            return self.default_text
        if self.default is None or self.default == ():
            return "unset"
        return _value_text(self.default)


@dataclass(frozen=True)
class Text(EnvVar[T]):
    """A string (a name, a path, a specification parsed by its user)."""

    def parse(self, text: str) -> T:
        return text  # type: ignore[return-value]  # T is str or str | None


@dataclass(frozen=True)
class Secret(EnvVar["bytes | None"]):
    """A key in hex (at least 32 hex digits: 128 bits); never shown (``doctor --env`` says
    only whether it is set) and never quoted in an error."""

    kind = "secret (hex)"

    def parse(self, text: str) -> bytes | None:
        try:
            key = bytes.fromhex(text)
        except ValueError:
            key = b""
        if len(key) < 16:
            raise UsageError(f"{self.name} must be at least 32 hex digits (a random key)")
        return key


@dataclass(frozen=True)
class Flag(EnvVar[bool]):
    """On unless unset, ``0``, ``false``, ``no`` or ``off``."""

    kind = "flag"

    def parse(self, text: str) -> bool:
        return text.lower() not in _OFF


@dataclass(frozen=True)
class TriFlag(EnvVar["bool | None"]):
    """A flag whose absence (None) leaves the decision to the code that reads it."""

    kind = "flag or unset"

    def parse(self, text: str) -> bool | None:
        return text.lower() not in _OFF


@dataclass(frozen=True)
class Int(EnvVar[T]):
    """A decimal integer, at least ``minimum`` when one is given."""

    minimum: int | None = None
    kind = "integer"

    def parse(self, text: str) -> T:
        want = "an integer" if self.minimum is None else f"an integer >= {self.minimum}"
        if self.minimum == 1:
            want = "a positive integer"
        try:
            value = int(text)
        except ValueError:
            raise UsageError(f"{self.name} must be {want}, got {text!r}") from None
        if self.minimum is not None and value < self.minimum:
            raise UsageError(f"{self.name} must be {want}, got {text!r}")
        return value  # type: ignore[return-value]  # T is int or int | None


@dataclass(frozen=True)
class List(EnvVar[tuple[str, ...]]):
    """A comma list; empty items are dropped."""

    kind = "comma list"

    def parse(self, text: str) -> tuple[str, ...]:
        return tuple(p.strip() for p in text.split(",") if p.strip())


# --- the variables, in the order doctor lists them --------------------------------------

TRACEBACK = Flag("NEURONASV_TRACEBACK", False, "print the traceback of an internal error (exit 11)")
BACKEND: Text[str] = Text(
    "NEURONASV_BACKEND",
    "auto",
    "backend of the asv suite and benchmarks/_ops.py: auto, cpu, cuda or neuron",
)
CPU_THREADS: Int[int] = Int(
    "NEURONASV_CPU_THREADS", 1, "intra-op threads for CPU measurements", minimum=1
)
NEURON_MODES = List(
    "NEURONASV_NEURON_MODES",
    (),
    "Neuron profiler ProfileMode names, e.g. RUNTIME",
    default_text="DEVICE,RUNTIME",
)
PEAK: Text[str | None] = Text(
    "NEURONASV_PEAK",
    None,
    "roof for 'of peak': a table key (h100-pcie, trn2/nc) or bw=GB/s,bfloat16=TFLOP/s,...",
    default_text="by backend and device model; the CPU: its calibration",
)
HOST_ID: Text[str | None] = Text(
    "NEURONASV_HOST_ID",
    None,
    "host name recorded in the environment fingerprint",
    default_text="the host name",
)
NO_DEVICE_STATE = Flag(
    "NEURONASV_NO_DEVICE_STATE", False, "do not record device state (clocks, temperature)"
)
WORKLOADS = List("NEURONASV_WORKLOADS", (), "modules registering the user's own workloads")
SUITE_REPO: Text[str | None] = Text(
    "NEURONASV_SUITE_REPO",
    None,
    "profile: the repository whose asv suite registers workloads (confirm sets it)",
    default_text="the repository around the current folder",
)
SHAPES = List(
    "NEURONASV_SHAPES",
    (),
    "asv suite: shapes replacing the suite's (e.g. 4x512,8x4096)",
    default_text="the suite's",
)
DTYPES = List(
    "NEURONASV_DTYPES",
    (),
    "asv suite: dtypes replacing the suite's (e.g. float32)",
    default_text="the suite's",
)
LARGE = TriFlag(
    "NEURONASV_LARGE",
    None,
    "asv suite: add the accelerator shapes (on: also on the CPU; off: never)",
    default_text="on except on the CPU",
)
SAMPLES: Int[int | None] = Int(
    "NEURONASV_SAMPLES",
    None,
    "asv suite: samples per profile",
    default_text="repeat x rounds",
)
QUICK = Flag(
    "NEURONASV_QUICK", False, "asv suite: minimal profile (neuronasv run --quick)", set_by=RUN
)
PROFILE_OUT: Text[str | None] = Text(
    "NEURONASV_PROFILE_OUT",
    None,
    "asv suite: folder for each profile's JSON (the run sidecar reads it)",
    set_by=RUN,
)
TRACE_DIR: Text[str | None] = Text(
    "NEURONASV_TRACE_DIR",
    None,
    "asv suite: folder for profiler traces (neuronasv run --keep-traces)",
    set_by=RUN,
)
OPS_CATALOGUE: Text[str | None] = Text(
    "NEURONASV_OPS_CATALOGUE",
    None,
    "asv suite: the machine's op catalogue, added to the seed ops.json",
    set_by=RUN,
)
PEAK_FILE: Text[str | None] = Text(
    "NEURONASV_PEAK_FILE",
    None,
    "asv suite: the machine's calibrated CPU peak (<results>/<machine>/calibration.peaks)",
    set_by=RUN,
)
PREPASS_DIR: Text[str | None] = Text(
    "NEURONASV_PREPASS_DIR",
    None,
    "asv suite: pre-pass payloads that setup_cache reuses",
    set_by=RUN,
)
COMPILE_CACHE: Text[str | None] = Text(
    "NEURONASV_COMPILE_CACHE",
    None,
    "neuronasv run: torch.compile's cache folder, shared by the pre-pass and asv",
    default_text="torch's own (/tmp/torchinductor_<user>)",
)
USER_HOME: Text[str | None] = Text(
    "NEURONASV_USER_HOME",
    None,
    "asv suite: the user's HOME, given back to benchmark processes (asv's own is private)",
    set_by=RUN,
)
INSTR_DIR: Text[str | None] = Text(
    "NEURONASV_INSTR_DIR",
    None,
    "asv suite: the callgrind pass's counts (adds instr_total/instr_op)",
    set_by=RUN,
)
MEMORY = Flag(
    "NEURONASV_MEMORY",
    False,
    "asv suite: each op's self allocated bytes too (adds alloc_total/alloc_op)",
    set_by=RUN,
)
INSTR_PHASES = Flag(
    "NEURONASV_INSTR_PHASES",
    False,
    "callgrind pass: each configuration logs its phases' seconds (bench_instr_breakdown)",
)
CACHE_KEY = Secret(
    "NEURONASV_CACHE_KEY",
    None,
    "regressions --cache-dir: the key that signs its entries (CI: from a secret)",
    default_text="the key file beside the cache folder (<folder>.neuronasv-key)",
)
REPOSITORY: Text[str | None] = Text(
    "NEURONASV_REPOSITORY",
    None,
    "wheel build (setup.py): the GitHub OWNER/REPO the wheel records for init's pins",
    default_text="the build checkout's GitHub origin, else none (init asks for --from)",
)

VARIABLES: tuple[EnvVar[Any], ...] = (
    TRACEBACK,
    BACKEND,
    CPU_THREADS,
    NEURON_MODES,
    PEAK,
    HOST_ID,
    NO_DEVICE_STATE,
    WORKLOADS,
    SUITE_REPO,
    SHAPES,
    DTYPES,
    LARGE,
    SAMPLES,
    QUICK,
    PROFILE_OUT,
    TRACE_DIR,
    OPS_CATALOGUE,
    PEAK_FILE,
    PREPASS_DIR,
    COMPILE_CACHE,
    USER_HOME,
    INSTR_DIR,
    MEMORY,
    INSTR_PHASES,
    CACHE_KEY,
    REPOSITORY,
)

_BY_NAME = {v.name: v for v in VARIABLES}


def by_name(name: str) -> EnvVar[Any]:
    """The declared variable called ``name`` (KeyError when it is not declared)."""
    return _BY_NAME[name]


@dataclass(frozen=True)
class Described:
    """One line of ``neuronasv doctor --env``."""

    name: str
    kind: str
    value: str  #: the value as set (control characters escaped), or ``unset``
    effective: str  #: what the reader makes of it, ``invalid: ...`` when it fails
    default: str
    set_by: str
    doc: str


def _shown(text: str) -> str:
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def _value_text(value: object) -> str:
    if isinstance(value, tuple):
        return ",".join(value) if value else "(none)"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def describe(environ: Mapping[str, str] | None = None) -> list[Described]:
    """Every declared variable with its value in ``environ`` (default ``os.environ``)."""
    env = os.environ if environ is None else environ
    out = []
    for var in VARIABLES:
        raw = env.get(var.name)
        if isinstance(var, Secret) and var.raw(env) is not None:
            raw = "(set, not shown)"
            try:
                var.read(env)
                effective = "a key"
            except UsageError as exc:
                effective = f"invalid: {exc.message}"
        elif var.raw(env) is None:
            effective = f"default ({var.shown_default()})"
        else:
            try:
                effective = _value_text(var.read(env))
            except UsageError as exc:
                effective = f"invalid: {exc.message}"
        out.append(
            Described(
                name=var.name,
                kind=var.kind,
                value="unset" if raw is None else repr(_shown(raw)),
                effective=_shown(effective),
                default=var.shown_default(),
                set_by=var.set_by,
                doc=var.doc,
            )
        )
    return out
