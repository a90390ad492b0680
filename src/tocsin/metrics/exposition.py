"""The `/metrics` answer, and prometheus-client's multiprocess mode for `tocsin api
--workers N`.

N API processes share one port, so a scrape reaches one of them at random: each must answer
for all. prometheus-client does that with values kept in files under one directory
(`PROMETHEUS_MULTIPROC_DIR`), read together at each scrape. `tocsin api --workers N` makes
a fresh directory for each run (stale files from an earlier run would be added in), points
its processes at it before they fork, and removes it when they have stopped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client import values as prometheus_values
from prometheus_client.multiprocess import MultiProcessCollector

from tocsin.metrics.instruments import QUEUE
from tocsin.store.ports import StatusReads

CONTENT_TYPE = CONTENT_TYPE_LATEST
_DIRECTORY = "PROMETHEUS_MULTIPROC_DIR"


async def render(store: StatusReads | None) -> bytes:
    """This process's metrics (all the API processes' under multiprocess mode) in the
    Prometheus text format, with the queue's numbers read from `store` when given."""
    if store is not None:
        await QUEUE.refresh(store)
    directory = os.environ.get(_DIRECTORY)
    if not directory:
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    registry.register(QUEUE)  # read by the process answering, for all
    return generate_latest(registry)


@contextmanager
def multiprocess() -> Iterator[str]:
    """Run the block (which forks the API processes) in multiprocess mode, with a directory
    of its own, removed at the end."""
    directory = tempfile.mkdtemp(prefix="tocsin-metrics-")
    os.environ[_DIRECTORY] = directory
    # prometheus-client picks its value class when first imported, which the CLI has done
    # by now; the instruments made after this (`http_metrics`, at the first request in each
    # process) take the multiprocess one.
    prometheus_values.ValueClass = prometheus_values.MultiProcessValue()  # type: ignore[no-untyped-call]
    try:
        yield directory
    finally:
        prometheus_values.ValueClass = prometheus_values.MutexValue
        os.environ.pop(_DIRECTORY, None)
        shutil.rmtree(directory, ignore_errors=True)
