"""Complete asv machine information.

``asv machine --yes --machine X`` stores only the name when X is not the host's own name;
asv then copies that entry into every results file. ``neuronasv run`` fills every field
asv defines (os, arch, cpu, num_cpu, ram) from asv's own probes and saves the entry where
asv reads it (``~/.asv-machine.json``), so results carry real machine facts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["MACHINE_FIELDS", "machine_file", "machine_info", "save_machine"]

MACHINE_FIELDS: tuple[str, ...] = ("machine", "os", "arch", "cpu", "num_cpu", "ram")


def machine_file() -> str:
    """asv's machine file (it honours ``HOME``)."""
    return os.path.expanduser("~/.asv-machine.json")


def machine_info(
    name: str | None = None, fingerprint: Mapping[str, str] | None = None
) -> dict[str, str]:
    """asv machine fields for this host; ``name`` overrides the host name.

    When the fingerprint names an accelerator (``device_model``), it is appended to ``cpu``
    so that asv's own pages show which device the numbers came from.
    """
    from asv.machine import Machine

    info = {k: str(v) for k, v in Machine.get_defaults().items()}
    if name:
        info["machine"] = name
    device = (fingerprint or {}).get("device_model", "none")
    backend = (fingerprint or {}).get("backend", "cpu")
    if backend != "cpu" and device and device != "none":
        info["cpu"] = f"{info.get('cpu', '')} + {device}".strip(" +")
    for key in MACHINE_FIELDS:
        info.setdefault(key, "unknown")
        if not info[key]:
            info[key] = "unknown"
    return info


def save_machine(info: Mapping[str, str], path: str | None = None) -> str:
    """Store ``info`` under its name in asv's machine file; return the file's path."""
    from asv.machine import MachineCollection

    target = path or machine_file()
    MachineCollection.save(info["machine"], dict(info), _path=target)
    return target
