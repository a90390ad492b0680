"""Running a benchmark several times (medians), and `bench all`: the set of
docs/benchmarks.md at sizes that fit `make bench`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import orjson

from tocsin.bench.progress import note
from tocsin.bench.stats import median_of
from tocsin.errors import StoreError

Result = dict[str, Any]


async def repeated(scenario: Callable[[], Awaitable[Result]], runs: int) -> Result:
    """Run `scenario` `runs` times; with more than one run, its metrics are the medians."""
    results = []
    for run in range(max(1, runs)):
        if runs > 1:
            note(f"run {run + 1} of {runs}")
        results.append(await _once(scenario))
        if runs > 1:  # each run on stderr as it ends, so a cut-short series is not lost
            note(f"run {run + 1}: " + orjson.dumps(results[-1]["metrics"]).decode())
    if len(results) == 1:
        return results[0]
    merged = dict(results[0])
    merged["metrics"] = median_of([result["metrics"] for result in results])
    merged["runs"] = len(results)
    merged["each_run"] = [result["metrics"] for result in results]
    return merged


async def _once(scenario: Callable[[], Awaitable[Result]]) -> Result:
    """Run once; when the run broke (the shared database restarted under it, say), say so
    and run it again, once."""
    try:
        return await scenario()
    except (OSError, RuntimeError, StoreError, asyncpg.PostgresError) as error:
        note(f"the run failed ({type(error).__name__}: {error}); running it again")
    return await scenario()


async def run_all(*, runs: int, pg_url: str | None, quick: bool) -> list[Result]:
    """Every row of the table in docs/benchmarks.md; `quick` shrinks each to a smoke run."""
    from tocsin.bench.api import ApiSpec, run_api
    from tocsin.bench.firing import FiringSpec, run_firing
    from tocsin.bench.limit import LimitSpec, run_limit
    from tocsin.bench.storage import StorageSpec, run_storage

    scale = 100 if quick else 1
    burst = 100_000 // scale
    specs: list[tuple[str, Callable[[], Awaitable[Result]]]] = [
        (
            "burst postgres",
            lambda: run_firing(
                FiringSpec(
                    scenario="burst",
                    db="postgres",
                    reminders=burst,
                    spread=1,
                    workers=2,
                    channel="null",
                    pg_url=pg_url,
                )
            ),
        ),
        (
            "burst sqlite",
            lambda: run_firing(
                FiringSpec(
                    scenario="burst",
                    db="sqlite",
                    reminders=burst,
                    spread=1,
                    workers=1,
                    channel="null",
                )
            ),
        ),
        (
            "busy minute",
            lambda: run_firing(
                FiringSpec(
                    scenario="burst",
                    db="postgres",
                    reminders=1_000_000 // scale,
                    spread=60,
                    workers=2,
                    channel="null",
                    pg_url=pg_url,
                )
            ),
        ),
        (
            "steady",
            lambda: run_firing(
                FiringSpec(
                    scenario="steady",
                    db="postgres",
                    reminders=2_300 * (60 if not quick else 5),
                    spread=60 if not quick else 5,
                    workers=2,
                    channel="webhook",
                    pg_url=pg_url,
                    rate=2_300,
                )
            ),
        ),
        ("limit", lambda: run_limit(LimitSpec(rows=200_000 // scale, pg_url=pg_url))),
        (
            "api",
            lambda: run_api(
                ApiSpec(db="postgres", duration=10.0 if not quick else 2.0, pg_url=pg_url)
            ),
        ),
        ("storage", lambda: run_storage(StorageSpec(rows=1_000_000 // scale, pg_url=pg_url))),
    ]
    results = []
    for name, scenario in specs:
        note(f"== {name}")
        results.append(await repeated(scenario, runs))
    return results
