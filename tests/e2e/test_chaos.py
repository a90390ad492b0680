"""A short `tocsin chaos` run, as a user runs it: the real command as a subprocess, on
PostgreSQL, with every fault (the PostgreSQL stop only where the server is a local cluster
this test may stop), ending with no violation."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.support.postgres import PostgresServer
from tests.support.processes import clean_env
from tocsin_bench.chaos_plan import RECEIVER_FOR, REFERENCE_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.exclusive]

# 90 s of due instants hold every fault, each apart from the others: the PostgreSQL stop from
# 22 s, the receiver's 503s from 40 s for 18 s, a worker killed every ~5 s (the shortest
# interval the plan allows) until the end.
SECONDS, RATE = 90, 50
COMMAND = [
    *("chaos", "--duration", f"{SECONDS}s", "--rate", str(RATE), "--workers", "3"),
    # Short moves and freshness: the run must end, settled, within the test's time.
    *("--freshness", "2m", "--snooze", "10s", "--edit-by", "10s", "--json"),
]
RINGS = SECONDS * RATE


def _run(pg_server: PostgresServer) -> tuple[int, dict[str, Any], str]:
    completed = subprocess.run(
        [sys.executable, "-m", "tocsin", *COMMAND, "--pg-url", pg_server.admin_url],
        capture_output=True,
        text=True,
        timeout=280,
        env=clean_env(),
        check=False,
    )
    report: dict[str, Any] = json.loads(completed.stdout) if completed.stdout else {}
    return completed.returncode, report, completed.stderr


@pytest.mark.timeout(300)
def test_a_short_chaos_run_ends_with_no_violation(pg_server: PostgresServer) -> None:
    status, report, errors = _run(pg_server)
    assert report, errors
    assert report["violations"] == {}, report["violations"]
    assert status == 0, errors
    metrics = report["metrics"]
    counts = metrics["counts"]
    assert metrics["settled"] is True
    assert counts["created"] + counts["not_created"] == RINGS
    assert counts["created"] >= RINGS * 0.99, "the API took nearly every batch in time"
    assert counts["identities_accepted"] > RINGS * 0.9, "most rang through the receiver"
    races = counts["races"]
    assert races["cancel"].get("204", 0) > 0, races
    assert races["edit"].get("200", 0) > 0, races
    assert races["snooze"].get("200", 0) + races["snooze"].get("201", 0) > 0, races
    faults = metrics["faults"]
    assert len(faults["kills"]) >= 10, "a worker killed every ~5 s"
    assert faults["receiver"]["seconds"] == pytest.approx(
        RECEIVER_FOR * SECONDS / REFERENCE_SECONDS
    )
    assert isinstance(faults["postgres"], dict | str)
