"""Prometheus metrics: the instruments (`instruments`), the `/metrics` answer
(`exposition`), and the worker's small HTTP port (`port`)."""
