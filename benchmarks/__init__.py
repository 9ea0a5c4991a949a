"""Benchmarks of requeststate against its primitives and peers: ``python -m benchmarks``."""
