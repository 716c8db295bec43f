from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "analyse")
if HERE not in sys.path:
    sys.path.insert(0, HERE)
