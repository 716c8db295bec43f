"""Callgrind's client requests from Python, and reading callgrind's counts back.

Instruction counts come from ``valgrind --tool=callgrind`` (see ``docs/instructions.md``).
Collection is switched on only inside the measured iterations, by *client requests* — magic
instruction sequences that only valgrind's synthetic CPU interprets (a no-op on a real
CPU). Python cannot emit them, so a tiny C helper does: :data:`HELPER_SOURCE`, eight short
functions over the macros of ``<valgrind/callgrind.h>``, compiled with the system C
compiler into a shared library that :class:`ClientRequests` loads with ``ctypes``.

Why a compiled helper and not a PyPI package: the header ships with the ``valgrind``
package itself (Debian/Ubuntu ``apt-get install valgrind``), so the requests always match
the valgrind that runs them; the helper is 40 lines, builds in well under a second, adds no
Python dependency, and exposes exactly the requests this needs (toggle, zero, dump with a
label). CodSpeed's instrument hooks wrap the same macros for CodSpeed's own runner
protocol (start/stop a named benchmark), not per-op toggles and labelled dumps.

The helper is built into a folder the caller owns (a run's temporary folder), never into
the package or ``$HOME``.

Counts are read from the dump files callgrind writes at each ``DUMP_STATS_AT`` request:
:func:`parse_dump` takes the ``desc: Trigger: Client Request: <label>`` line and the
``totals:``/``summary:`` line of the ``Ir`` event (instructions executed).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from neuronasv.errors import BackendUnavailable
from neuronasv.proc import run_process

__all__ = [
    "HELPER_SOURCE",
    "MATRIX_ISA",
    "ClientRequests",
    "Dump",
    "build_helper",
    "parse_dump",
    "read_dumps",
    "read_functions",
    "valgrind_status",
    "valgrind_version",
]

HELPER_NAME = "libneuronasv_callgrind.so"

#: The matrix libraries' instruction sets under valgrind. valgrind's virtual CPU offers
#: AVX2 with FMA, and it runs every FMA lane through a helper call: MKL's AVX2 ``sgemm``
#: kernels made one transformer-block step take 5.5 s under valgrind against 3 ms native
#: (31.9 M instructions), 0.09 s with MKL's SSE4.2 kernels (101 M instructions; measured
#: here, docs/instructions.md). The counts are of the SSE4.2 kernels then, the same at
#: every commit; ATen's own kernels keep valgrind's AVX2. Not ATen's ``default``
#: capability (``ATEN_CPU_CAPABILITY=default``), though it would cut the pass by half on an
#: adopter's bfloat16 configurations (a ViT training step 11.7 s -> 0.6 s under valgrind
#: uninstrumented): its compiler-vectorised loops peel by the data's alignment, so an op's
#: count follows the heap (measured: ``aten::rsqrt`` of rmsnorm.naive 5,974 then 5,968 when
#: another op was added before it, all in ``DEFAULT::vectorized_loop``). The runner sets
#: these in the pass's environment (:func:`neuronasv.run.instrrun.valgrind_env`); the pass
#: records them.
MATRIX_ISA: dict[str, str] = {
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
}

HELPER_SOURCE = r"""
/* neuronasv: callgrind client requests for ctypes (see neuronasv/measure/callgrind.py). */
#include <stdlib.h>
#include <valgrind/valgrind.h>
#include <valgrind/callgrind.h>

int nasv_on_valgrind(void) { return (int)RUNNING_ON_VALGRIND; }
void nasv_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void nasv_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
void nasv_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void nasv_zero(void) { CALLGRIND_ZERO_STATS; }
void nasv_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
void nasv_discard(void) { VALGRIND_DISCARD_TRANSLATIONS(0x1000, ~0xfffUL); }
/* Keep one heap block of every small size and one large one: later allocations of those
   sizes land elsewhere (instructions.py counts the check after this). */
static void *volatile nasv_kept[260];
void nasv_shift_heap(void) {
  int i = 0;
  for (unsigned long size = 8; size <= 4096; size += 16) nasv_kept[i++] = malloc(size);
  nasv_kept[i] = malloc(1UL << 20);
}
"""


def _compiler() -> str | None:
    for cc in (os.environ.get("CC", ""), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    return None


def build_helper(folder: str) -> str:
    """Compile the helper into ``folder``; its path.

    Raises:
        BackendUnavailable: no C compiler, or ``valgrind/callgrind.h`` is not installed.
    """
    cc = _compiler()
    if cc is None:
        raise BackendUnavailable(
            "no C compiler (cc/gcc/clang) to build the callgrind helper",
            hint="install one: apt-get install gcc",
        )
    os.makedirs(folder, exist_ok=True)
    src = os.path.join(folder, "neuronasv_callgrind.c")
    out = os.path.join(folder, HELPER_NAME)
    with open(src, "w", encoding="utf-8") as fh:
        fh.write(HELPER_SOURCE)
    proc = run_process([cc, "-O1", "-shared", "-fPIC", "-o", out, src], text=True, timeout=120)
    if proc.returncode != 0:
        last = (str(proc.stderr).strip().splitlines() or ["?"])[-1]
        raise BackendUnavailable(
            f"cannot build the callgrind helper: {last}",
            hint="install valgrind (it ships valgrind/callgrind.h): apt-get install valgrind",
        )
    return out


class ClientRequests:
    """The callgrind client requests, through the helper library at ``path``."""

    def __init__(self, path: str) -> None:
        # PyDLL: the GIL stays held across the call (CDLL would release and retake it,
        # and take_gil costs a different number of instructions from call to call).
        lib = ctypes.PyDLL(path)
        for name in ("nasv_start", "nasv_stop", "nasv_toggle", "nasv_zero", "nasv_shift_heap",
                     "nasv_discard"):  # fmt: skip
            getattr(lib, name).restype = None
            getattr(lib, name).argtypes = []
        lib.nasv_on_valgrind.restype = ctypes.c_int
        lib.nasv_dump.argtypes = [ctypes.c_char_p]
        lib.nasv_dump.restype = None
        self._lib = lib
        # Bound once: each call through the same objects costs the same instructions.
        self.start = lib.nasv_start
        self.stop = lib.nasv_stop
        self.toggle = lib.nasv_toggle
        self.zero = lib.nasv_zero
        #: keep a heap block of every small size and a large one (the check's shift)
        self.shift_heap = lib.nasv_shift_heap
        #: drop every translation valgrind made so far (measure/instructions.prime)
        self.discard_translations = lib.nasv_discard

    def on_valgrind(self) -> bool:
        """True inside a valgrind process (the requests do nothing elsewhere)."""
        return bool(self._lib.nasv_on_valgrind())

    def dump(self, label: str) -> None:
        """Write the counts collected since the last dump/zero, labelled, and zero them."""
        self._lib.nasv_dump(label.encode("utf-8"))


@dataclass(frozen=True)
class Dump:
    """One callgrind dump: its label and the instructions (``Ir``) it counted.

    Attributes:
        label: the ``DUMP_STATS_AT`` label.
        total: every instruction collected.
        excluded: those in the memory allocators and the interpreter's specialiser
            (:data:`EXCLUDED_FUNCTIONS`), whose cost depends on the process's history.
        harness: the rest of those in the Python interpreter and ``ctypes``
            (:data:`HARNESS_OBJECTS`): not part of an op's count.
    """

    label: str
    total: int
    excluded: int = 0
    harness: int = 0
    #: the file it was read from (:func:`read_dumps`)
    path: str = field(default="", compare=False)
    #: ``(object, function)`` -> the instructions counted there (self cost; neither
    #: excluded nor harness), when asked for (:func:`parse_dump` ``functions=True``)
    functions: Mapping[tuple[str, str], int] | None = field(default=None, compare=False)

    @property
    def instructions(self) -> int:
        """A whole step's count: ``total - excluded`` (its Python code is the workload)."""
        return self.total - self.excluded

    @property
    def native(self) -> int:
        """An op's count: native code only, the Python harness around the call left out."""
        return self.total - self.excluded - self.harness


#: Functions whose own instructions are not counted. glibc's ``malloc``/``free`` walk free
#: lists whose state is whatever the process did before (measured here: the same step
#: cost 401,299 then 403,290 instructions, all of the difference in ``_int_malloc``,
#: ``_int_free``, ``_int_memalign``, ``malloc_consolidate``), and CPython's adaptive
#: interpreter re-specialises code now and then (``_PyCode_Quicken``,
#: ``_Py_Specialize_*``). glibc's string functions (``memcmp``, ``memcpy``, ...) take
#: more or fewer instructions by the alignment of the pointers they get, which is the
#: heap's history again (measured: ``aten::add_`` 59,642 then 59,636 instructions, the
#: difference all in ``__memcmp_avx2_movbe``). When the heap must grow or shrink, glibc
#: asks the kernel (``sbrk``, ``brk``, ``mmap``, ``__glibc_morecore``): whether a call
#: does is the heap's history too (measured: ``aten::mm`` of the transformer block
#: 90,692,139 then 90,692,044, the 95 all in those and ``malloc_consolidate``). pybind11
#: keeps every live Python wrapper of a C++ object in one hash table keyed by the object's
#: address, so inserting and erasing there walks chains that follow the heap's history too
#: (measured: ``profiler::_record_function_enter_new`` of an optimizer step 10,961, 10,956,
#: 10,961 in three replays, every instruction of the difference in that table's
#: ``_M_insert_multi_node``). The autograd engine's walk of the graph keeps its nodes in
#: hash tables keyed by their addresses too (``compute_dependencies``,
#: ``evaluate_function``, ``GraphTask::init_to_execute``, ``task_should_compute_output``
#: and the tables' own ``std::_Hashtable<torch::autograd::Node*, ...>`` functions):
#: measured, the total of a ConvNeXt training step moved by up to 459 instructions from
#: one count to the next, every one in these (0.07 % of the step), and the transformer
#: block's backward (``autograd.backward`` with inputs: ``exec_info``) by 716 with the heap
#: shifted; without them the counts agree. The backward's ops and the engine's calls into
#: them still count. A C++ exception's unwinder asks glibc which loaded object holds each
#: return address (``_dl_find_object``, a search over the objects' load addresses), and
#: where the libraries were mapped differs between two valgrind processes, so its count
#: does too, where no heap shift inside one process moves it (measured: the replayed
#: ``profiler::_record_function_exit`` of a ConvNeXt training step, whose pybind11
#: dispatch throws and catches, 164,710 then 164,798 instructions in two passes, all 88
#: in ``_dl_find_object``; the step itself throws nothing). The unwinder's own walk of
#: each object's tables still counts. pybind11 finds the C++ types of a Python type in a
#: hash table keyed by the type object's address (``all_type_info_get_cache``), and those
#: objects are made at import, before a configuration's process is forked, so their
#: addresses follow what the pass's process did before, where the heap shift cannot move
#: them (measured: a ConvNeXt training step's total 167,254,191 in a pass of the whole
#: suite, 167,254,113 in a pass of its class alone, all 78 there). None of these is the code
#: under test; the calls into them still count (a new copy or allocation is seen at its
#: call site).
EXCLUDED_FUNCTIONS = re.compile(
    r"^(_int_malloc|_int_free|_int_memalign|_int_realloc|malloc_consolidate|unlink_chunk"
    r"|alloc_perturb|sysmalloc|sysmalloc_\w+|systrim|tcache_\w+|_mid_memalign"
    r"|__libc_\w*(alloc|free)\w*|munmap_chunk|mremap_chunk"
    r"|_*(sbrk|brk|glibc_morecore|default_morecore|mmap|mmap64|munmap|mremap|madvise)"
    r"|malloc|free|calloc|realloc|posix_memalign|aligned_alloc|memalign|cfree"
    r"|_PyCode_Quicken|_Py_Specialize_\w+|_PyObject_Malloc|_PyObject_Free|_PyObject_Realloc"
    r"|pymalloc_\w+|allocate_from_new_pool|insert_to_freepool|insert_to_usedpool"
    r"|_PyMem_RawMalloc|_PyMem_RawFree|_PyMem_RawRealloc|PyMem_\w*(Malloc|Free|Realloc)"
    r"|analyze_descriptor|_dl_find_object|pybind11::detail::all_type_info_get_cache\(.*"
    r"|std::_Hashtable<void const\*, std::pair<void const\* const, pybind11::detail::instance\*>.*"
    r"|torch::autograd::(Engine::(compute_dependencies|evaluate_function)"
    r"|GraphTask::init_to_execute|Node::task_should_compute_output)\(.*"
    r"|std::(_Hashtable|__detail::_Map_base|unordered_(map|set))<torch::autograd::Node\*.*"
    r"|_*(memcpy|memmove|mempcpy|memset|memcmp|bcmp|memchr|memrchr|wmemset|strlen|strnlen"
    r"|strcmp|strncmp|strchr|strrchr)(_\w+)?)(\.[\w.]+)?(@\S+)?('\d+)?$"
)

#: Shared objects of the harness around an op call: the interpreter running the dispatch
#: mode and ``ctypes`` issuing the requests. CPython re-specialises its polymorphic call
#: sites (the dispatch mode calls every op through the same lines) at intervals that depend
#: on how often they ran before, so their count is not a property of the op: measured here,
#: two identical ``aten::mul`` measurements differed by 111 instructions, all in
#: ``libpython``. The op's own work — bindings, dispatcher, kernel — is native code.
HARNESS_OBJECTS = re.compile(
    r"(libpython[\d.]+\w*\.so[\d.]*|/python[\d.]*|_ctypes[^/]*\.so|libffi[^/]*)$"
)

#: The object callgrind names when no file maps the code: code generated at run time (the
#: oneDNN kernels) and the stubs of ``.plt.sec`` sections, which valgrind neither names nor
#: skips as it does ``.plt`` entries (libpython's calls to its own functions go through
#: them): a stub whose every call goes into a harness object is the harness's
#: (:class:`_DumpParser`).
UNNAMED_OBJECT = "???"

_NAME = re.compile(r"^\((\d+)\)(?:\s+(.*))?$")


def _fn_name(value: str, names: dict[str, str]) -> str:
    """``(12) malloc`` defines id 12; ``(12)`` refers to it (callgrind's compression)."""
    m = _NAME.match(value.strip())
    if m is None:
        return value.strip()
    if m.group(2) is not None:
        names[m.group(1)] = m.group(2)
    return names.get(m.group(1), "")


def parse_dump(text: str, *, functions: bool = False) -> Dump | None:
    """The label, ``Ir`` total and excluded share of one dump file; None for others.

    Only dumps written by a ``DUMP_STATS_AT`` request carry a label; the final dump at
    program exit (``Trigger: Program termination``) is not one of ours. The excluded share
    sums the *self* cost lines of the :data:`EXCLUDED_FUNCTIONS` (the line after a
    ``calls=`` line is a call's inclusive cost and is skipped). ``functions``: also the
    counted instructions per function (:attr:`Dump.functions`: where two counts differ).
    """
    parser = _DumpParser(functions)
    for line in text.splitlines():
        if line:
            parser.feed(line)
    return parser.dump()


class _DumpParser:
    """One dump file's lines, fed in order: the header (label, events, totals), the
    position lines naming the current object and function, and the cost lines."""

    def __init__(self, functions: bool = False) -> None:
        self.label: str | None = None
        self.functions: dict[tuple[str, str], int] | None = {} if functions else None
        self.events: list[str] = []
        self.npos = 1
        self.total: int | None = None
        self.names: dict[str, str] = {}
        self.current = ""
        self.objects: dict[str, str] = {}
        self.obj = ""
        self.excluded = self.harness = 0
        self.after_call = False
        # code of no object: its self cost, and the objects its calls go to (a stub's
        # instructions are its callee's), settled when the dump ends
        self.unnamed: dict[str, int] = {}
        self.unnamed_callees: dict[str, set[str]] = {}
        self.callee_obj: str | None = None

    def feed(self, line: str) -> None:
        head = line[0]
        if head.isdigit() or head in "+-*":
            self._cost(line)
            return
        key, _, value = line.partition("=")
        if key in ("fn", "ob", "cob", "cfn", "calls"):
            self._position(key, value)
        else:
            self._header(line)

    def dump(self) -> Dump | None:
        if self.label is None or self.total is None:
            return None
        harness = self.harness
        for fn, cost in self.unnamed.items():
            callees = self.unnamed_callees.get(fn)
            if callees and all(HARNESS_OBJECTS.search(o) for o in callees):
                harness += cost
            elif self.functions is not None:
                key = (UNNAMED_OBJECT, fn)
                self.functions[key] = self.functions.get(key, 0) + cost
        return Dump(self.label, self.total, self.excluded, harness, functions=self.functions)

    def _cost(self, line: str) -> None:
        if self.after_call:  # a call's inclusive cost, not the caller's own
            self.after_call = False
            return
        cost = _ir(line, self.npos, self.events)
        if EXCLUDED_FUNCTIONS.match(self.current):
            self.excluded += cost
        elif HARNESS_OBJECTS.search(self.obj):
            self.harness += cost
        elif self.obj == UNNAMED_OBJECT:
            self.unnamed[self.current] = self.unnamed.get(self.current, 0) + cost
        elif self.functions is not None:
            key = (self.obj, self.current)
            self.functions[key] = self.functions.get(key, 0) + cost

    def _position(self, key: str, value: str) -> None:
        if key == "fn":
            self.current = _fn_name(value, self.names)
        elif key == "ob":
            self.obj = _fn_name(value, self.objects)
        elif key == "cob":
            self.callee_obj = _fn_name(value, self.objects)
        elif key == "cfn":
            _fn_name(value, self.names)
        else:  # calls (a call without cob= stays in the caller's object)
            self.after_call = True
            if self.obj == UNNAMED_OBJECT:
                callee = self.callee_obj if self.callee_obj is not None else self.obj
                self.unnamed_callees.setdefault(self.current, set()).add(callee)
            self.callee_obj = None

    def _header(self, line: str) -> None:
        if line.startswith("desc: Trigger: Client Request: "):
            self.label = line.split(": ", 2)[2].removeprefix("Client Request: ").strip()
        elif line.startswith("positions:"):
            self.npos = len(line.split()[1:])
        elif line.startswith("events:"):
            self.events = line.split()[1:]
        elif line.startswith(("summary:", "totals:")) and "Ir" in self.events:
            values = line.split()[1:]
            i = self.events.index("Ir")
            self.total = int(values[i]) if i < len(values) else 0


def _ir(line: str, npos: int, events: list[str]) -> int:
    """The ``Ir`` value of a cost line (positions first, then one value per event)."""
    if "Ir" not in events:
        return 0
    parts = line.split()
    i = npos + events.index("Ir")
    return int(parts[i]) if i < len(parts) else 0


def read_dumps(folder: str, prefix: str, *, remove: bool = True) -> dict[str, Dump]:
    """Every labelled dump ``<folder>/<prefix>*`` as ``{label: dump}``.

    ``remove`` deletes the files once read (a suite writes hundreds of them), callgrind's
    own dump at each process's exit (no label, nothing collected) included; without it,
    :func:`read_functions` can read a dump again, function by function.
    """
    found: dict[str, Dump] = {}
    for name in sorted(os.listdir(folder)):
        if not name.startswith(prefix):
            continue
        path = os.path.join(folder, name)
        with open(path, encoding="utf-8", errors="replace") as fh:
            dump = parse_dump(fh.read())
        if dump is not None:
            found[dump.label] = replace(dump, path=path)
        if remove:
            os.unlink(path)
    return found


def read_functions(dump: Dump) -> Mapping[tuple[str, str], int]:
    """The counted instructions of ``dump`` per (object, function), read again from its
    file (:func:`read_dumps` with ``remove=False``); empty when the file is gone."""
    try:
        with open(dump.path, encoding="utf-8", errors="replace") as fh:
            again = parse_dump(fh.read(), functions=True)
    except OSError:
        return {}
    return (again.functions or {}) if again is not None else {}


def valgrind_version(valgrind: str = "valgrind") -> str | None:
    """``3.19.0`` (from ``valgrind --version``), or None when it does not run."""
    exe = shutil.which(valgrind)
    if exe is None:
        return None
    try:
        proc = run_process([exe, "--version"], text=True, timeout=30)
    except OSError:
        return None
    text = str(proc.stdout).strip()
    return text.removeprefix("valgrind-") if proc.returncode == 0 and text else None


def valgrind_status(valgrind: str = "valgrind") -> tuple[bool, str]:
    """(usable, one line) for ``doctor``: valgrind, its callgrind header and a C compiler."""
    version = valgrind_version(valgrind)
    if version is None:
        return False, "not installed (apt-get install valgrind); the instructions metric is off"
    missing = [
        what
        for what, ok in (
            ("valgrind/callgrind.h", _header_present()),
            ("a C compiler", _compiler() is not None),
        )
        if not ok
    ]
    if missing:
        return False, f"valgrind {version}, but no {' and no '.join(missing)}"
    return True, f"valgrind {version}: usable (--metrics devtime,instructions)"


def _header_present(dirs: Iterable[str] = ("/usr/include", "/usr/local/include")) -> bool:
    return any(os.path.isfile(os.path.join(d, "valgrind", "callgrind.h")) for d in dirs)


