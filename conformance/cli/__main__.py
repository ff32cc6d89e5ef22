"""``python -m conformance.cli`` runs the ``kconform`` command (as before the CLI became a package)."""

from __future__ import annotations

import sys

from .main import main

sys.exit(main())
