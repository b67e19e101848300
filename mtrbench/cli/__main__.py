"""``python -m mtrbench.cli``: the same as the ``mtrbench`` command."""

import sys

from mtrbench.cli import main

sys.exit(main())
