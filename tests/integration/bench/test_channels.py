"""Small runs of `tocsin bench burst` through the channels with peers of their own — APNs
(HTTP/2), SMTP, the in-app feed's pages — so that those benchmark modes cannot rot: every
ring must reach its peer once, checked by the peer (signature, headers, identity)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.support.postgres import PostgresServer

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

REMINDERS = 60


def _burst(channel: str, pg_server: PostgresServer) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOCSIN_")}
    env["TOCSIN_DATABASE_URL"] = pg_server.admin_url
    command = [sys.executable, "-m", "tocsin", "bench", "burst", "--channel", channel]
    sizes = ["--reminders", str(REMINDERS), "--owners", "20", "--workers", "1"]
    completed = subprocess.run(
        [*command, *sizes, "--spread", "1", "--due-in", "3", "--json"],
        capture_output=True,
        text=True,
        timeout=100,
        env=env,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result: dict[str, Any] = json.loads(completed.stdout)
    metrics: dict[str, Any] = result["metrics"]
    assert metrics["finished"] is True
    assert metrics["lost"] == 0
    assert metrics["duplicates"] == 0
    assert metrics["states"] == {"sent": REMINDERS}
    return metrics


@pytest.mark.timeout(110)
@pytest.mark.parametrize("channel", ["apns", "email"])
def test_each_ring_reaches_the_peer_once(channel: str, pg_server: PostgresServer) -> None:
    peer = _burst(channel, pg_server)["peer"]
    assert peer["accepted"] == REMINDERS
    assert peer["unique"] == REMINDERS
    if channel == "apns":
        assert peer["refused"] == {}
        assert peer["token_verifications"] == peer["connections"] >= 1
    else:
        assert peer["logins"] == peer["connections"] >= 1


@pytest.mark.timeout(110)
def test_each_ring_reaches_its_owners_page_once(pg_server: PostgresServer) -> None:
    pages = _burst("inapp", pg_server)["pages"]
    assert pages["pages"] == 20
    assert pages["events"] == pages["unique"] == REMINDERS
    assert pages["lost_connections"] == 0
