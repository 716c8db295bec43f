"""Complete asv machine information.

``asv machine --yes --machine X`` stores only the name when X is not the host's own name;
asv then copies that entry into every results file. ``neuronasv run`` fills every field
asv defines (os, arch, cpu, num_cpu, ram) from asv's own probes and saves the entry in the
machine file asv is then pointed at (asv reads ``~/.asv-machine.json`` only, so ``neuronasv
run`` gives asv a private ``HOME`` in its scratch folder; the user's home is never written),
so results carry real machine facts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from neuronasv.errors import UsageError
from neuronasv.measure.backends import is_accelerator

__all__ = [
    "MACHINE_FIELDS",
    "MACHINE_FILE_NAME",
    "check_machine_name",
    "machine_info",
    "save_machine",
]

MACHINE_FIELDS: tuple[str, ...] = ("machine", "os", "arch", "cpu", "num_cpu", "ram")
# A machine name is a folder of the results tree (and of the results branch): host-name
# characters only, so it can never climb out of ``--results-dir`` or hide as a dot folder.
_MACHINE_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+@-]{0,99}")


def check_machine_name(name: str) -> str:
    """``name`` when it is a safe machine name, else :class:`UsageError` saying why.

    Allowed: letters, digits and ``._+@-``, not starting with ``.`` or ``-``, at most 100
    characters, no ``..`` (no path separators, so it stays one folder below the results).
    """
    if not isinstance(name, str) or not _MACHINE_RE.fullmatch(name) or ".." in name:
        raise UsageError(
            f"invalid machine name {name!r}: use letters, digits and ._+@- (no path"
            " separators, no '..', not starting with '.' or '-', at most 100 characters)"
        )
    return name


#: asv's machine file, in the folder asv takes for ``HOME`` (asv 0.6.6
#: ``MachineCollection.get_machine_file_path``: ``~/.asv-machine.json``).
MACHINE_FILE_NAME = ".asv-machine.json"


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
    check_machine_name(info.get("machine", ""))
    device = (fingerprint or {}).get("device_model", "none")
    backend = (fingerprint or {}).get("backend", "cpu")
    if is_accelerator(backend) and device and device != "none":
        info["cpu"] = f"{info.get('cpu', '')} + {device}".strip(" +")
    for key in MACHINE_FIELDS:
        info.setdefault(key, "unknown")
        if not info[key]:
            info[key] = "unknown"
    return info


def save_machine(info: Mapping[str, str], path: str) -> str:
    """Store ``info`` under its name in the machine file ``path``; return ``path``.

    There is no default: the user's ``~/.asv-machine.json`` is never written.
    """
    from asv.machine import MachineCollection

    MachineCollection.save(info["machine"], dict(info), _path=path)
    return path
