"""Analyse stage: verdicts (PR mode), change points (history), attribution, acks.

Pure: nothing here reads files, git or HTTP except the acknowledgements file codec and the
confirmation runner, both injected at the edges. Input is ``model.History`` (from
``neuronasv.store.history.load_history``); output is ``model.FindingsDocument``.

Names are imported on first use (PEP 562): the site imports ``analyse.states`` alone,
and must not pay for scipy.stats (seconds and ~70 MB) through this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neuronasv.analyse.acks import Acknowledgement, load_acks, match_ack, save_acks
    from neuronasv.analyse.attribution import attribute
    from neuronasv.analyse.changepoints import CPSettings, detect, detect_history
    from neuronasv.analyse.floors import NoiseFloor, floor_key, noise_floors
    from neuronasv.analyse.pairwise import PairInput, Settings, compare, judge
    from neuronasv.analyse.patterns import SeriesPattern
    from neuronasv.analyse.rules import Rule, RuleSet

_WHERE = {
    "Acknowledgement": "acks",
    "load_acks": "acks",
    "match_ack": "acks",
    "save_acks": "acks",
    "attribute": "attribution",
    "CPSettings": "changepoints",
    "detect": "changepoints",
    "detect_history": "changepoints",
    "NoiseFloor": "floors",
    "floor_key": "floors",
    "noise_floors": "floors",
    "PairInput": "pairwise",
    "Settings": "pairwise",
    "compare": "pairwise",
    "judge": "pairwise",
    "SeriesPattern": "patterns",
    "Rule": "rules",
    "RuleSet": "rules",
}

__all__ = [
    "Acknowledgement",
    "CPSettings",
    "NoiseFloor",
    "PairInput",
    "Rule",
    "RuleSet",
    "SeriesPattern",
    "Settings",
    "attribute",
    "compare",
    "detect",
    "detect_history",
    "floor_key",
    "judge",
    "load_acks",
    "match_ack",
    "noise_floors",
    "save_acks",
]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value
