"""A smoke run of `tocsin bench burst` on both backends, so the benchmark cannot rot: it must
run end to end with real processes (`tocsin worker` on PostgreSQL, `tocsin serve
--null-channels` on SQLite) and report nothing lost, nothing twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.postgres import PostgresServer

pytestmark = pytest.mark.slow


def _burst(db: str, env: dict[str, str]) -> dict[str, object]:
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "tocsin",
            "bench",
            "burst",
            "--db",
            db,
            "--reminders",
            "200",
            "--spread",
            "1",
            "--workers",
            "1",
            "--due-in",
            "3",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=100,
        env=env,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result: dict[str, object] = json.loads(completed.stdout)
    return result


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOCSIN_")}
    env.update(extra)
    return env


def _check(result: dict[str, object]) -> None:
    metrics = result["metrics"]
    assert isinstance(metrics, dict)
    assert metrics["finished"] is True
    assert metrics["firings"] == 200
    assert metrics["lost"] == 0
    assert metrics["duplicates"] == 0
    assert metrics["states"] == {"sent": 200}


@pytest.mark.timeout(110)
def test_burst_on_sqlite() -> None:
    result = _burst("sqlite", _env())
    _check(result)
    assert result["params"] == {
        "db": "sqlite",
        "engine": "tocsin serve",
        "reminders": 200,
        "spread_s": 1,
        "workers": 1,
        "channel": "null",
    }


@pytest.mark.postgres
@pytest.mark.timeout(110)
def test_burst_on_postgres(pg_server: PostgresServer) -> None:
    result = _burst("postgres", _env(TOCSIN_DATABASE_URL=pg_server.admin_url))
    _check(result)
    metrics = result["metrics"]
    assert isinstance(metrics, dict)
    # Every ring accepted at its first try: the claim inserts its ring (the reminder's row and
    # the occurrence's row of `due` are left alone), the firing is written once with its
    # result (the claim does not write it), and no attempts row.
    assert metrics["row_writes"] == {
        "reminders_updated": 0,
        "reminders_hot": 0,
        "due_deleted": 0,
        "rings_inserted": 200,
        "firings_inserted": 200,
        "firings_updated": 0,
        "firings_hot": 0,
        "attempts_inserted": 0,
        "firings_rolled_back": 0,
        "attempts_rolled_back": 0,
        "per_ring": 2.0,
    }
