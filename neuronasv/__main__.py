"""``python -m neuronasv`` = the ``neuronasv`` command."""

import sys

from neuronasv.cli import main

sys.exit(main())
