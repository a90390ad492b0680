"""What a worker's log says through a database outage, through the running service: one line
when it cannot connect, one every 30 s while that lasts, one when it connects again — no
traceback, and no line a second from each part, the lease keeper and the delivery queue."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.loud import unavailable
from tests.support.postgres import OwnServer, own_server
from tests.support.processes import clean_env, free_port, tocsin

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

OUTAGE = 8.0  # seconds: several renewals, reads and queue looks, well under the 30 s repeat


@pytest.fixture
def server() -> Iterator[OwnServer]:
    with own_server() as own:
        if isinstance(own, str):
            unavailable("a PostgreSQL of the test's own", own)
        yield own


def _ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _wait(check: object, seconds: float) -> None:
    assert callable(check)
    give_up = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < give_up, "timed out"
        time.sleep(0.2)


@pytest.mark.timeout(120)
def test_an_outage_is_three_lines_in_a_workers_log(server: OwnServer, tmp_path: Path) -> None:
    url = server.server.url_for("postgres")
    assert tocsin("migrate", "--db", url).returncode == 0
    port = free_port()
    log = tmp_path / "worker.log"
    env = clean_env(TOCSIN_PARTS="16", TOCSIN_LEASE_SECONDS="2")
    command = [sys.executable, "-m", "tocsin", "worker", "--db", url, "--metrics-port", str(port)]
    with log.open("w") as out:
        worker = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _wait(lambda: _ready(port), 60)
        server.stop()
        time.sleep(OUTAGE)
        server.start()
        _wait(lambda: "connected to the database again" in log.read_text(), 60)
        _wait(lambda: _ready(port), 60)
    finally:
        worker.terminate()
        worker.wait(30)
    lines = log.read_text().splitlines()
    said = [line for line in lines if re.search(r" (WARNING|ERROR) ", line)]
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
    assert [line for line in said if "cannot connect to the database:" in line], said
    assert len([line for line in said if "cannot connect to the database" in line]) == 1, said
    assert not [line for line in said if "failed" in line], said
    assert len([line for line in said if "connected to the database again" in line]) == 1, said
    # Beside those, a handful of lines that each say a change once (the LISTEN connection
    # lost, the leases run out), not one a second from each part.
    assert len(said) <= 6, said
