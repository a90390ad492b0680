"""Benchmarks, `tocsin chaos`, and the local peers they (and the engine's tests) run against:
Tocsin's test tooling, kept out of the `tocsin` distribution."""

__version__ = "0.1.0"
