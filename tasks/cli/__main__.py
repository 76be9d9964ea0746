"""``python -m tasks.cli ...``: the ``faq`` command without the console script."""

from __future__ import annotations

import sys

from tasks.cli import main

sys.exit(main())
