"""``python -m requeststate``: the command line."""

from .cli import console

console()
