"""``python -m chronolog.worker``: see ``chronolog.worker.main``."""

from __future__ import annotations

import sys

from .main import main

if __name__ == "__main__":
    sys.exit(main())
