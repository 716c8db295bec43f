"""The one home of every key neuronasv spells from a configuration (stage 0, imports nothing).

A configuration is one (workload, shape, dtype) of the suite; what is keyed by it is spelled
here and only here (``tests/test_formats_home.py`` fails on a second spelling):

* :class:`Config`, the configuration itself: a ``NamedTuple``, so it stays equal to, hashes
  like and serialises as the plain 3-tuple it replaced;
* :func:`profile_key`, ``workload[shape,dtype]``: a profile's key in a profile document, the
  sidecars and ``RunRef.traces``;
* :func:`results_key`, ``shape|dtype``: an entry of a suite class's payload (its ``results``
  and ``instr`` maps), :func:`split_results_key` its inverse;
* :func:`safe_name` and :func:`payload_name`, a pass's payload file ``<key>.json``, the key
  made safe for a file name (the way asv keeps ``get_filename``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "Config",
    "SeriesConfig",
    "payload_name",
    "profile_key",
    "results_key",
    "safe_name",
    "split_results_key",
]


class Config(NamedTuple):
    """One configuration of the suite: a workload at one shape and dtype."""

    workload: str
    shape: str
    dtype: str


#: A series' configuration: None in every place for a plain asv benchmark (not neuronasv's).
SeriesConfig = tuple["str | None", "str | None", "str | None"]


def profile_key(workload: str | None, shape: str | None, dtype: str | None) -> str:
    """``rmsnorm.naive[4x512,bfloat16]``: a profile's key (``WorkloadProfile.key``)."""
    return f"{workload}[{shape},{dtype}]"


def results_key(shape: str, dtype: str) -> str:
    """``4x512|bfloat16``: a (shape, dtype) entry of a suite class's payload."""
    return f"{shape}|{dtype}"


def split_results_key(key: str) -> tuple[str, str]:
    """``(shape, dtype)`` of a :func:`results_key` (a shape holds no ``|``)."""
    shape, _, dtype = key.partition("|")
    return shape, dtype


def safe_name(text: str) -> str:
    """``text`` as a file name: every run of other characters than ``[A-Za-z0-9._-]`` -> _."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def payload_name(key: str) -> str:
    """``<key>.json``, the key made safe: a pass's payload file of one workload or profile."""
    return safe_name(key) + ".json"
