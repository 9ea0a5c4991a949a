"""The package's version: one declaration, read by the build (hatch) and by the counters."""

__version__ = "0.4.0"
