"""Folders a step clears: it deletes only what a step of ours created (a marker inside).

The same rule as ``ci/lib.sh`` ``claim_dir``/``remove_owned`` (issue 22 item 5), for the
package's steps: an existing folder is removed only when it carries
:data:`OWNED_MARKER`; an empty folder is taken as is; anything else (a user's folder, a
file, a symbolic link) is refused with a usage error and left as it was.
"""

from __future__ import annotations

import os
import shutil

from neuronasv.errors import UsageError

__all__ = ["OWNED_MARKER", "claim_dir", "remove_owned"]

OWNED_MARKER = ".neuronasv-owned"


def claim_dir(path: str) -> None:
    """``path`` afresh and marked as ours (see the module doc)."""
    if os.path.islink(path) or (os.path.exists(path) and not os.path.isdir(path)):
        raise UsageError(f"{path} exists and is not a folder: choose another path")
    if os.path.isfile(os.path.join(path, OWNED_MARKER)):
        shutil.rmtree(path)
    elif os.path.isdir(path) and os.listdir(path):
        raise UsageError(
            f"{path} exists and was not created by this script (no {OWNED_MARKER}):"
            " nothing deleted; remove it yourself or choose another folder"
        )
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, OWNED_MARKER), "w", encoding="utf-8"):
        pass


def remove_owned(path: str) -> None:
    """Delete ``path`` only when :func:`claim_dir` made it."""
    if not os.path.lexists(path):
        return
    if os.path.islink(path) or not os.path.isfile(os.path.join(path, OWNED_MARKER)):
        raise UsageError(
            f"refusing to delete {path}: it was not created by this script (no {OWNED_MARKER})"
        )
    shutil.rmtree(path)
