"""Analyse stage: verdicts (PR mode), change points (history), attribution, acks.

Pure: nothing here reads files, git or HTTP except the acknowledgements file codec and the
confirmation runner, both injected at the edges. Input is ``model.History`` (from
``neuronasv.store.history.load_history``); output is ``model.FindingsDocument``.
"""

from __future__ import annotations

from neuronasv.analyse.acks import Acknowledgement, load_acks, match_ack, save_acks
from neuronasv.analyse.attribution import attribute, headline
from neuronasv.analyse.changepoints import CPSettings, detect, detect_history
from neuronasv.analyse.floors import NoiseFloor, floor_key, noise_floors
from neuronasv.analyse.pairwise import PairInput, Settings, compare, judge
from neuronasv.analyse.rules import Rule, RuleSet

__all__ = [
    "Acknowledgement",
    "CPSettings",
    "NoiseFloor",
    "PairInput",
    "Rule",
    "RuleSet",
    "Settings",
    "attribute",
    "compare",
    "detect",
    "detect_history",
    "floor_key",
    "headline",
    "judge",
    "load_acks",
    "match_ack",
    "noise_floors",
    "save_acks",
]
