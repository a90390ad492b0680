"""The scheduler: holds parts under leases, loads their buckets ahead, fires by the second
and claims each ring with one conditional update (see docs/architecture.md)."""

from __future__ import annotations

from tocsin.scheduler.engine import Engine, EngineTuning, make_engine, new_worker_id
from tocsin.scheduler.loader import LoadTuning

__all__ = ["Engine", "EngineTuning", "LoadTuning", "make_engine", "new_worker_id"]
