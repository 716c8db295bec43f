"""Where ``build_suite`` lived before the suite stage had a package of its own.

Suites written by ``neuronasv init`` before then import ``neuronasv.store.suite``; the
commits that hold such a suite are measured with their own suite, so the name must keep
working for them. New code imports :mod:`neuronasv.suite`.
"""

from __future__ import annotations

from neuronasv.suite.build import build_suite, import_backend_name

__all__ = ["build_suite", "import_backend_name"]
