"""Moved into the package: ``python -m neuronasv.ci pr-comment`` (neuronasv/ci/pr_comment.py).

Kept so that a checkout's old invocation (``python ci/pr_comment.py ...``) still works: it
runs the installed package's code, the same as the reusable workflow does.
"""

from __future__ import annotations

import sys

from neuronasv.ci import pr_comment as _impl

globals().update({k: v for k, v in vars(_impl).items() if not k.startswith("__")})

if __name__ == "__main__":
    sys.exit(_impl.main())
