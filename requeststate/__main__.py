"""``python -m requeststate``: the command line."""

from ._cli import console

console()
