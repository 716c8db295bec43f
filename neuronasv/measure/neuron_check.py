"""``neuronasv doctor --neuron-check``: every Neuron assumption checked on the host it runs on.

The neuron backend was written from the public Neuron sources without hardware
(``shared/research/neuron-api-audit.md``). This runs each assumption on a real Trn2/Trn3
host and writes a report a maintainer can act on (``neuron-check.md`` +
``neuron-check.json``): per check a status (``pass``, ``warn``, ``fail``, ``skip``), what was
found, and what to do. On a host without TorchNeuron the first check fails with what is
needed and the device checks are skipped, so it is also safe to run anywhere.

Checks, in order:

1. ``build`` — native TorchNeuron vs the PyTorch/XLA torch-neuronx, torch >= 2.10;
2. ``profiling_api`` — ``NeuronConfig``/``ProfileMode``/``NeuronProfiler``, the DEVICE and
   RUNTIME modes;
3. ``config_options`` — ``correlate_device_time`` and ``neff_cache_dir`` accepted, and
   read back from the built config (correlation stays "unknown" until ``capture`` shows
   device time in ``key_averages()``: an option the C++ session does not know is dropped);
4. ``environment`` — ``NEURON_RT_INSPECT_ENABLE`` unset (it conflicts with torch.profiler),
   ``NEURON_LOGICAL_NC_CONFIG`` vs the instance type, the LNC the NKI kernel will use;
5. ``versions`` — Neuron runtime, driver, ``nki``, ``neuronx-cc``;
6. ``device`` — PrivateUse1 named ``neuron``, ``torch.neuron`` sees a NeuronCore;
7. ``compile_backend`` — ``torch.compile(backend="neuron")`` is registered;
8. ``capture`` — ``rmsnorm.naive`` profiled: where its device time came from
   (``key_averages()``, neuron-explorer on the NTFFs, or only ``trace.json``), each source
   tried, the per-op table;
9. ``trace_folder`` — the real nesting under the trace folder, ``.ntff``/``.neff``/
   ``trace.json`` present, the chrome-trace categories (for ``neuron_trace``);
10. ``explorer`` — ``neuron-explorer --version``, and one ``view ... --output-format
    summary-json`` on the capture's first NTFF (what it says, and whether it is
    summary-json at all);
11. ``nki`` — the NKI kernel imports, runs, and matches ``torch.rms_norm``.

Tested against stand-ins (``@pytest.mark.standin``); its purpose is the real host.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from neuronasv.format import format_value
from neuronasv.measure.backends.neuron import NeuronBackend
from neuronasv.measure.neuron_formats import (
    SOURCE_DEVICE_ROWS,
    SOURCE_KEY_AVERAGES,
    SOURCE_SUMMARY_TOOL,
)
from neuronasv.units import US

#: Sources of device time that Neuron documents (neuron-explorer's outputs).
_EXPLORER_SOURCES = (SOURCE_SUMMARY_TOOL, SOURCE_DEVICE_ROWS.split("(")[0])

__all__ = ["Check", "NeuronCheckReport", "render_markdown", "run_neuron_check", "write_report"]

STATUSES = ("pass", "warn", "fail", "skip")


@dataclass
class Check:
    """One assumption: its status, what was found, what to do."""

    name: str
    status: str
    found: str
    action: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "found": self.found,
            "action": self.action,
            "data": self.data,
        }


@dataclass
class NeuronCheckReport:
    checks: list[Check]
    host: dict[str, str]

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "neuronasv.neuron-check",
            "schema_version": 1,
            "host": self.host,
            "checks": [c.to_json() for c in self.checks],
            "failed": [c.name for c in self.failed],
        }


def _guard(name: str, fn: Callable[[], Check]) -> Check:
    try:
        return fn()
    except Exception as exc:  # a crashing check is a finding, not the end of the report
        tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return Check(name, "fail", f"the check itself raised: {tb}", "report this output")


def _tree(root: str, limit: int = 60) -> list[str]:
    out = []
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(dirpath, root)
        for f in sorted(files):
            out.append(os.path.normpath(os.path.join(rel, f)))
            if len(out) >= limit:
                return [*out, "..."]
    return out


@dataclass
class _Ctx:
    """What the steps of one check share: the inputs, and what earlier steps found."""

    out_dir: str
    workload: str
    samples: int
    build: Any
    inst: str = "unknown"
    profiling: Any = None
    backend: Any = None
    device_ok: bool = False

    @property
    def trace_root(self) -> str:
        return os.path.join(self.out_dir, "traces")


def _build_check(build: Any) -> Check:
    from neuronasv.measure.neuron_build import what_is_needed

    return Check(
        "build",
        "pass" if build.usable else "fail",
        f"torch-neuronx {build.version} ({build.flavour}): {build.detail}; torch {build.torch}",
        what_is_needed(build) or "",
        build.to_json(),
    )


def _api_check(ctx: _Ctx) -> Check:
    from neuronasv.measure.backends.neuron import DEFAULT_MODES

    if not ctx.build.usable:
        return Check("profiling_api", "skip", "no native TorchNeuron", "fix `build` first")
    import importlib

    ctx.profiling = profiling = importlib.import_module("torch_neuronx.profiling")
    modes = [m for m in dir(profiling.ProfileMode) if m.isupper()]
    missing = [m for m in DEFAULT_MODES if m not in modes]
    return Check(
        "profiling_api",
        "fail" if missing else "pass",
        f"ProfileMode members: {', '.join(modes) or 'none'}",
        f"ProfileMode lacks {', '.join(missing)}: set NEURONASV_NEURON_MODES"
        if missing
        else "",
        {"modes": modes},
    )


def _options_check(ctx: _Ctx) -> Check:
    from neuronasv.measure.backends.neuron import build_neuron_config, read_back

    if ctx.profiling is None:
        return Check("config_options", "skip", "no profiling module", "fix `build` first")
    probe = os.path.join(ctx.out_dir, "config-probe")
    cfg, correlated = build_neuron_config(ctx.profiling, output_dir=probe, neff_cache_dir=probe)
    back = read_back(cfg, "correlate_device_time")
    neff = read_back(cfg, "neff_cache_dir")
    found = (
        f"correlate_device_time passed: {correlated} (read back: {back}; works: unknown"
        f" until `capture` shows device time in key_averages()); neff_cache_dir read back:"
        f" {neff}"
    )
    action = ""
    status = "pass"
    if not correlated:
        status = "warn"
        action = (
            "device time must come from neuron-explorer on the NTFFs; check `capture`,"
            " `trace_folder` and `explorer`"
        )
    elif back == "unknown":
        status = "warn"
        action = "the option cannot be read back: `capture` shows whether it worked"
    return Check("config_options", status, found, action, {"read_back": back, "neff": neff})


def _environment_check(ctx: _Ctx) -> Check:
    from neuronasv.measure.workloads import nki_rmsnorm as nki_mod

    inst = ctx.inst
    lnc_env = os.environ.get(nki_mod.LNC_ENV)
    env_problems = []
    if os.environ.get("NEURON_RT_INSPECT_ENABLE"):
        env_problems.append(
            "NEURON_RT_INSPECT_ENABLE is set: it conflicts with torch.profiler"
            " (environment-variables.rst); unset it for neuronasv runs"
        )
    try:
        lnc = nki_mod.launch_lnc()
    except ValueError as exc:
        lnc = 0
        env_problems.append(str(exc))
    if not inst.lower().startswith(("trn2", "trn3")):
        env_problems.append(f"instance type {inst!r}: TorchNeuron targets Trn2/Trn3 only")
    return Check(
        "environment",
        "warn" if env_problems else "pass",
        f"instance {inst}; {nki_mod.LNC_ENV}={lnc_env or '(unset)'}; NKI launch LNC {lnc}",
        "; ".join(env_problems),
        {"instance_type": inst, "lnc_env": lnc_env, "lnc": lnc},
    )


def _versions_check(ctx: _Ctx) -> Check:
    from neuronasv.measure.backends.neuron import neuron_driver, neuron_runtime
    from neuronasv.measure.fingerprint import dist_version, first_line

    versions = {
        "neuron_runtime": neuron_runtime(first_line) or "none",
        "driver": neuron_driver() or "none",
        "nki": dist_version("nki"),
        "neuronx_cc": dist_version("neuronx-cc", "neuronx_cc"),
        "torch_neuronx": ctx.build.version,
    }
    missing_v = [k for k, v in versions.items() if v == "none"]
    return Check(
        "versions",
        "warn" if missing_v else "pass",
        ", ".join(f"{k} {v}" for k, v in versions.items()),
        f"not found: {', '.join(missing_v)} (recorded as 'none' in the fingerprint)"
        if missing_v
        else "",
        versions,
    )


def _device_check(ctx: _Ctx) -> Check:
    if not ctx.build.usable:
        return Check("device", "skip", "no native TorchNeuron", "fix `build` first")
    reason = ctx.backend.unavailable_reason()
    ctx.device_ok = device_ok = reason is None
    return Check(
        "device",
        "pass" if device_ok else "fail",
        "a NeuronCore is visible" if device_ok else str(reason),
        "" if device_ok else (ctx.backend.install_hint() or ""),
    )


def _compile_backend_check(ctx: _Ctx) -> Check:
    if not ctx.build.usable:
        return Check("compile_backend", "skip", "no native TorchNeuron", "fix `build` first")
    import torch

    names = torch._dynamo.list_backends()
    ok = NeuronBackend.compile_backend in names
    return Check(
        "compile_backend",
        "pass" if ok else "fail",
        f"torch.compile backends: {', '.join(sorted(names))}",
        "" if ok else "rmsnorm.compiled and transformer compiled variants will fail",
    )


def _capture_check(ctx: _Ctx) -> Check:
    if not ctx.device_ok:
        return Check("capture", "skip", "no usable neuron device", "fix `device` first")
    from neuronasv.measure.profiling import ProfileOptions, profile_workload
    from neuronasv.measure.workloads import get

    backend, workload = ctx.backend, ctx.workload
    p = profile_workload(
        get(workload),
        backend,
        shape="4x512",
        dtype="bfloat16",
        options=ProfileOptions(samples=ctx.samples, trace_dir=ctx.trace_root, roofline=False),
    )
    src = p.device_time_source or SOURCE_KEY_AVERAGES
    ops = {o.op: round(sorted(o.self_device_time_us)[len(o.self_device_time_us) // 2], 3)
           for o in p.ops}  # fmt: skip
    sources = {o.op: o.device_time_source or SOURCE_KEY_AVERAGES for o in p.ops}
    total = sorted(p.device_time_us)[len(p.device_time_us) // 2]
    tried = list(backend.last_capture.tried) if backend.last_capture is not None else []
    documented = src == SOURCE_KEY_AVERAGES or src.startswith(_EXPLORER_SOURCES)
    return Check(
        "capture",
        "pass" if documented else "warn",
        f"{workload} 4x512 bf16: device time from {src};"
        f" {len(p.ops)} ops; median total {format_value(total * US, 'seconds')};"
        f" correlate_device_time: {backend.correlation_status()}",
        ""
        if documented
        else "neither key_averages() nor neuron-explorer gave device time; only the exported"
        " trace.json did (unverified): check `explorer`",
        {"source": src, "ops_us": ops, "sources": sources, "tried": tried,
         "trace_files": list(p.trace_files), "state": backend.measured_state()},
    )


def _trace_folder_check(ctx: _Ctx) -> Check:
    trace_root = ctx.trace_root
    if not os.path.isdir(trace_root):
        return Check("trace_folder", "skip", "no capture ran", "")
    from neuronasv.measure.neuron_trace import find_traces, summarise_categories

    files = _tree(trace_root)
    kinds = {ext: sum(1 for f in files if f.endswith(ext)) for ext in (".ntff", ".neff")}
    traces = [p for p, _, _ in find_traces(trace_root)]
    cats = summarise_categories(traces)
    problems = [f"no {ext} file" for ext, n in kinds.items() if n == 0]
    if not traces:
        problems.append("no trace.json")
    return Check(
        "trace_folder",
        "warn" if problems else "pass",
        f"{len(files)} files; {kinds['.ntff']} .ntff, {kinds['.neff']} .neff,"
        f" {len(traces)} trace.json; categories: "
        + ", ".join(f"{k} {v}" for k, v in sorted(cats.items())),
        "; ".join(problems)
        + (
            "; update docs/backends.md 'trace folder' and neuron_trace.DEVICE_CATEGORIES"
            " from data.files/data.categories"
            if problems
            else ""
        ),
        {"files": files, "categories": cats},
    )


def _explorer_check(ctx: _Ctx) -> Check:
    """``neuron-explorer --version``, then one summary-json on the capture's first NTFF."""
    from neuronasv.measure.neuron_capture import find_ntffs, pairings
    from neuronasv.measure.neuron_explorer import INSTALL_DIRS

    explorer, problem = ctx.backend.explorer()
    missing = "fail" if ctx.build.usable else "warn"
    if explorer is None:
        return Check(
            "explorer",
            missing,
            f"neuron-explorer {problem}",
            "install aws-neuronx-tools (`sudo apt install aws-neuronx-tools`) or put"
            f" {INSTALL_DIRS[0]} on PATH: Neuron device time is read from the NTFFs with it",
        )
    version, vproblem = explorer.version()
    data: dict[str, Any] = {"tool": explorer.tool, "version": version}
    if version is None:
        return Check("explorer", "fail", str(vproblem), "check the aws-neuronx-tools install", data)
    ntffs = find_ntffs(ctx.trace_root) if os.path.isdir(ctx.trace_root) else []
    if not ntffs:
        return Check(
            "explorer", "pass", f"{version}; no NTFF to read (no capture ran)", "", data
        )
    folder = os.path.dirname(ntffs[0][0])
    pairing = pairings(folder, os.listdir(folder))[0]
    outcome = explorer.summaries(pairing.target)
    data["target"] = pairing.target.args()
    if outcome.problem:
        return Check(
            "explorer",
            "fail",
            f"{version}; {outcome.problem}",
            "the tool cannot read this runtime's NTFF (tool/trace version skew?): match"
            " aws-neuronx-tools to the runtime",
            data,
        )
    one = outcome.summaries[0]
    data["summary"] = {
        "profile": one.profile,
        "device_time_us": one.device_time_us,
        "field": one.device_time_field,
        "total_time_us": one.total_time_us,
        "versions": dict(one.versions),
        "throttle": dict(one.throttle),
    }
    said = (
        f"{one.device_time_field} {format_value(one.device_time_us * US, 'seconds')}"
        if one.device_time_us is not None
        else f"no device time ({one.refusal})"
    )
    return Check(
        "explorer",
        "pass" if one.device_time_us is not None else "fail",
        f"{version}; summary-json on {one.profile}: {said}"
        + (
            f" (total_time {format_value(one.total_time_us * US, 'seconds')})"
            if one.total_time_us is not None
            else ""
        ),
        "" if one.device_time_us is not None else "attach neuron-check.json to an issue",
        data,
    )


def _nki_check(ctx: _Ctx) -> Check:
    from neuronasv.measure.workloads import nki_rmsnorm as nki_mod

    api_or_reason = nki_mod.import_nki()
    if isinstance(api_or_reason, str):
        return Check("nki", "fail" if ctx.build.usable else "skip", api_or_reason,
                     "install the nki package that matches TorchNeuron")  # fmt: skip
    if not ctx.device_ok:
        return Check("nki", "skip", "NKI imports; no device to run it", "fix `device` first")
    import torch

    from neuronasv.measure.workloads.rmsnorm import make_inputs

    step = nki_mod.NKI.build((4, 512), torch.float32, "neuron", 0)
    got: Any = step()
    x, w = make_inputs((4, 512), torch.float32, "neuron", 0)
    ref = torch.rms_norm(x, (512,), w, nki_mod.EPS)
    err = float((got.float() - ref.float()).abs().max().cpu())
    ok = err < 1e-3
    return Check(
        "nki",
        "pass" if ok else "fail",
        f"rmsnorm.nki vs torch.rms_norm, 4x512 float32: max |diff| {err:.2e}"
        f" (LNC {nki_mod.launch_lnc()})",
        "" if ok else "the kernel computes something else: check the tiling",
    )


def run_neuron_check(
    out_dir: str,
    *,
    workload: str = "rmsnorm.naive",
    samples: int = 3,
) -> NeuronCheckReport:
    """Run every check; ``out_dir`` receives the trace folder of the capture.

    The checks run in order, each a named step; a step that raises is a failed check
    (:func:`_guard`), and a later step skips what an earlier one found missing.
    """
    from neuronasv.measure.backends.neuron import NeuronBackend, instance_type
    from neuronasv.measure.fingerprint import host_id
    from neuronasv.measure.neuron_build import detect_neuron_build

    ctx = _Ctx(out_dir, workload, samples, detect_neuron_build())
    checks = [_build_check(ctx.build)]
    checks.append(_guard("profiling_api", lambda: _api_check(ctx)))
    checks.append(_guard("config_options", lambda: _options_check(ctx)))
    ctx.inst = instance_type() or "unknown"
    checks.append(_environment_check(ctx))
    checks.append(_versions_check(ctx))
    ctx.backend = NeuronBackend()
    for name, step in (
        ("device", _device_check),
        ("compile_backend", _compile_backend_check),
        ("capture", _capture_check),
        ("trace_folder", _trace_folder_check),
        ("explorer", _explorer_check),
        ("nki", _nki_check),
    ):
        checks.append(_guard(name, functools.partial(step, ctx)))
    host = {
        "host": host_id(),
        "instance_type": ctx.inst,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    return NeuronCheckReport(checks=checks, host=host)


_ICON = {"pass": "✅", "warn": "⚠️", "fail": "❌", "skip": "⏭️"}


def render_markdown(report: NeuronCheckReport) -> str:
    """The maintainer's report: a table of checks, then what to do."""
    lines = [
        "# neuronasv doctor --neuron-check",
        "",
        " · ".join(f"{k} `{v}`" for k, v in report.host.items()),
        "",
        "| check | status | found |",
        "|---|---|---|",
    ]
    for c in report.checks:
        found = c.found.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{c.name}` | {_ICON.get(c.status, '')} {c.status} | {found} |")
    todo = [c for c in report.checks if c.action and c.status in ("fail", "warn")]
    if todo:
        lines += ["", "## What to do", ""]
        lines += [f"- **{c.name}** ({c.status}): {c.action}" for c in todo]
    lines += [
        "",
        "Attach `neuron-check.json` (it holds the op table, the trace-folder listing and the"
        " trace categories) to an issue so the backend can be fixed from real data.",
        "",
    ]
    return "\n".join(lines)


def write_report(report: NeuronCheckReport, out_dir: str) -> tuple[str, str]:
    """Write ``neuron-check.md`` and ``neuron-check.json`` into ``out_dir``."""
    os.makedirs(out_dir, exist_ok=True)
    md = os.path.join(out_dir, "neuron-check.md")
    js = os.path.join(out_dir, "neuron-check.json")
    with open(md, "w", encoding="utf-8") as fh:
        fh.write(render_markdown(report))
    with open(js, "w", encoding="utf-8") as fh:
        json.dump(report.to_json(), fh, indent=2, sort_keys=True)
        fh.write("\n")
    return md, js
