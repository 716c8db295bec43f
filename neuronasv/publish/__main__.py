"""``python -m neuronasv.publish ...``: the same as ``neuronasv publish ...`` (a shim).

The CLI imports only the module of the command being run, so this costs nothing extra;
it stays for scripts and workflows that call it.
"""

from __future__ import annotations

import sys

from neuronasv.cli import main as cli_main


def main(argv: list[str] | None = None) -> int:
    return cli_main(["publish", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
