"""neuronasv: device time per workload and per op, as asv metrics, per commit, on PRs.

Data flows one way, and the sub-packages are named after the stages::

    measure  -> store  -> analyse -> report / publish
    (profile)  (asv results + sidecars)  (findings)   (PR comment, site)

``import neuronasv`` needs neither an accelerator nor torch_neuronx; torch itself is
imported only by the measure stage.
"""

from __future__ import annotations

from neuronasv.errors import NeuronasvError

__version__ = "0.1.0"

__all__ = ["NeuronasvError", "__version__"]
