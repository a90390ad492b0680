"""Benchmarks and the local peers they (and the engine's tests) run against."""
