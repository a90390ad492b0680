"""Running a benchmark several times (medians), and `bench all`: the set of
docs/benchmarks.md at sizes that fit `make bench`."""

from __future__ import annotations

import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import orjson

from tocsin import __version__
from tocsin.errors import StoreError
from tocsin_bench.progress import note
from tocsin_bench.stats import median_of

Result = dict[str, Any]


async def repeated(scenario: Callable[[], Awaitable[Result]], runs: int) -> Result:
    """Run `scenario` `runs` times; with more than one run, its metrics are the medians."""
    code = code_version()
    results = []
    for run in range(max(1, runs)):
        if runs > 1:
            note(f"run {run + 1} of {runs}")
        results.append(await _once(scenario))
        if runs > 1:  # each run on stderr as it ends, so a cut-short series is not lost
            note(f"run {run + 1}: " + orjson.dumps(results[-1]["metrics"]).decode())
    if len(results) == 1:
        return results[0] | {"code": code}
    merged = dict(results[0]) | {"code": code}
    merged["metrics"] = median_of([result["metrics"] for result in results])
    merged["runs"] = len(results)
    merged["each_run"] = [result["metrics"] for result in results]
    return merged


def code_version() -> str:
    """The commit the benchmark ran (the workers import the files on disk at their start),
    `+dirty` when files under src/ differed from it."""
    try:
        head = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no", "src")
    except (OSError, subprocess.SubprocessError):
        return f"tocsin {__version__}"
    return f"{head}+dirty" if dirty else head


def _git(*args: str) -> str:
    root = str(Path(__file__).resolve().parents[3])
    command = ["git", "-C", root, *args]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=10)  # noqa: S603
    return done.stdout.strip()


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
    from tocsin_bench.api import ApiSpec, run_api
    from tocsin_bench.firing import FiringSpec, run_firing
    from tocsin_bench.limit import LimitSpec, run_limit
    from tocsin_bench.storage import StorageSpec, run_storage

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
