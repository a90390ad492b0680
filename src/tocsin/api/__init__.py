"""The HTTP API: `create_app(store=…, settings=…, clock=…)` gives the FastAPI app."""

from __future__ import annotations

from tocsin.api.app import create_app

__all__ = ["create_app"]
