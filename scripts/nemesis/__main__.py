"""``python -m scripts.nemesis``: see scripts/nemesis/cli.py."""

from __future__ import annotations

import signal
import sys

from scripts.nemesis.cli import main

signal.signal(signal.SIGINT, signal.default_int_handler)
sys.exit(main())
