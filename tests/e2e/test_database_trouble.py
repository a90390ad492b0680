"""What `tocsin api` answers when its PostgreSQL is in trouble, through the running service:
a server that stops taking writes and then takes them again (a fenced primary, a failover)
is left by the next create, not minutes later; creates that cannot get a pooled connection
are answered 503 at once, not queued behind slow commits."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.e2e.service import iso
from tests.support.postgres import PostgresServer, execute
from tests.support.processes import clean_env, running

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

BODY = {"owner": "ana", "zone": "UTC", "channel": "log", "text": "stretch"}
ACQUIRE_TIMEOUT = 1.0
SOON = 30.0  # seconds: far beyond the acquire timeout, yet a short test


def _body() -> dict[str, Any]:
    return BODY | {"at": iso(datetime.now(UTC) + timedelta(hours=1))}


def _admin(url: str, sql: str) -> None:
    asyncio.run(execute(url, sql))


def _assert_unavailable(answer: httpx.Response) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert int(answer.headers["retry-after"]) > 0


@pytest.mark.timeout(120)
def test_creates_leave_a_server_that_took_no_writes_once_the_primary_is_back(
    tmp_path: Path, pg_migrated_url: str, pg_server: PostgresServer
) -> None:
    name = pg_migrated_url.rpartition("/")[2]
    env = clean_env()
    log = tmp_path / "api.log"
    with (
        running("api", "--db", pg_migrated_url, env=env, log=log) as (base, _),
        httpx.Client(base_url=base, timeout=30) as client,
    ):
        assert client.post("/v1/reminders", json=_body()).status_code == 201
        # Fenced: new sessions take no writes, and the API's connections are cut, so the
        # ones it makes again land on a server that refuses its creates.
        _admin(
            pg_server.admin_url,
            f'ALTER DATABASE "{name}" SET default_transaction_read_only = on',
        )
        _admin(
            pg_server.admin_url,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{name}' AND pid <> pg_backend_pid()",
        )
        refused = [client.post("/v1/reminders", json=_body()) for _ in range(3)]
        for answer in refused:
            _assert_unavailable(answer)
        assert "read-only" in log.read_text()
        # The primary takes writes again. Its connections, made while it was fenced, were
        # expired by the refusals: creates alone (nothing else re-points the pool) are
        # saved again within a few tries, not after the pool's five-minute idle limit.
        _admin(pg_server.admin_url, f'ALTER DATABASE "{name}" RESET default_transaction_read_only')
        tries = 0
        while (answer := client.post("/v1/reminders", json=_body())).status_code != 201:
            _assert_unavailable(answer)
            tries += 1
            assert tries < 50, answer.text
            time.sleep(0.1)


@pytest.mark.timeout(120)
def test_a_create_that_gets_no_pooled_connection_is_answered_503_at_once(
    tmp_path: Path, pg_migrated_url: str
) -> None:
    env = clean_env(TOCSIN_DATABASE_ACQUIRE_TIMEOUT_SECONDS=str(ACQUIRE_TIMEOUT))
    log = tmp_path / "api.log"
    with (
        running("api", "--db", pg_migrated_url, env=env, log=log) as (base, _),
        httpx.Client(base_url=base, timeout=SOON * 3) as client,
    ):
        assert client.post("/v1/reminders", json=_body()).status_code == 201
        # Commits that do not come: every create's statement waits on this lock, holding
        # one of the API process's 10 connections; the creates beyond 10 find none free.
        loop = asyncio.new_event_loop()
        holder = loop.run_until_complete(asyncpg.connect(pg_migrated_url))
        try:
            loop.run_until_complete(holder.execute("BEGIN; LOCK TABLE reminders"))
            with ThreadPoolExecutor(16) as pool:
                sent = [pool.submit(client.post, "/v1/reminders", json=_body()) for _ in range(16)]
                answered = _first_answers(sent, within=SOON)
                # While the lock is still held: those answers could not have waited for it.
                assert answered, "no create was answered while every connection was busy"
                for answer in answered:
                    _assert_unavailable(answer)
                loop.run_until_complete(holder.execute("COMMIT"))
                statuses = sorted(future.result().status_code for future in sent)
        finally:
            loop.run_until_complete(holder.close())
            loop.close()
    assert statuses.count(201) >= 10, statuses
    assert set(statuses) <= {201, 503}, statuses


def _first_answers(sent: list[Future[httpx.Response]], *, within: float) -> list[httpx.Response]:
    """The answers that came within `within` seconds (all creates still waiting otherwise)."""
    give_up = time.monotonic() + within
    while time.monotonic() < give_up:
        done = [future.result() for future in sent if future.done()]
        if done:
            time.sleep(ACQUIRE_TIMEOUT)  # the other creates past the pool end the same way
            return [future.result() for future in sent if future.done()]
        time.sleep(0.05)
    return []
