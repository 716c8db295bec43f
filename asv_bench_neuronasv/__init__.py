"""asv benchmark-type plugin: ``devtime_`` benchmarks return device-time samples.

asv_runner discovers this distribution because its metadata Name starts with
``asv_bench`` and imports ``asv_bench_neuronasv.benchmarks.*`` modules that export
``export_as_benchmark``. See :mod:`asv_bench_neuronasv.benchmarks.devtime`.

This module must stay light: asv imports it in every benchmark process.
"""

from __future__ import annotations

import os as _os

# ``neuronasv run`` starts asv with a private HOME (asv keeps its machine file in
# ``~/.asv-machine.json``; the run keeps it in its scratch folder, never the user's home).
# Benchmark processes get the user's HOME back here, before any suite module is imported,
# so a workload's caches (``~/.cache``) are the user's as in any other process.
_home = _os.environ.pop("NEURONASV_USER_HOME", "")
if _home:
    _os.environ["HOME"] = _home

__version__ = "0.1.0"

__all__ = ["__version__", "ensure_registered"]


def ensure_registered() -> None:
    """Make asv_runner know this plugin's types (``devtime_``, ``instr_``), however this
    package was installed.

    asv_runner finds plugins only among installed *distributions* whose metadata Name
    starts with ``asv_bench``. This package also ships inside the ``neuronasv`` wheel (one
    install for adopters), whose distribution name asv does not scan; the suite builder
    (``neuronasv.suite.build.build_suite``) therefore calls this when asv imports a suite
    module, before asv matches any benchmark name against the types. Every module of
    :mod:`asv_bench_neuronasv.benchmarks` is registered by its ``export_as_benchmark``, as
    asv_runner's own plugin scan does (registering only ``devtime_`` left an adopter's
    ``instr_`` series unrecognised: asv recorded none). A type already known (the
    standalone distribution registered it) is not added twice.
    """
    import importlib
    import pkgutil

    from asv_runner.benchmarks import benchmark_types

    from asv_bench_neuronasv import benchmarks

    known = {getattr(getattr(t, "name_regex", None), "pattern", None) for t in benchmark_types}
    for info in pkgutil.iter_modules(benchmarks.__path__):
        module = importlib.import_module(f"{benchmarks.__name__}.{info.name}")
        for kind in getattr(module, "export_as_benchmark", ()):
            if kind.name_regex.pattern not in known:
                benchmark_types.append(kind)
                known.add(kind.name_regex.pattern)
