"""Apps are tenants, and so are the contacts they save, through a running `tocsin serve`: app
X's webhook contact for ana never receives app Y's ring for ana, while the contact ana saved
herself receives both apps' rings (they are all hers)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.engine.support import Receiver, receiver
from tests.support.processes import clean_env, running, tocsin

pytestmark = pytest.mark.slow

PRIVATE = {"TOCSIN_ALLOW_PRIVATE_URLS": "true"}  # the receivers listen on loopback


def key_of(app: str, db: str, *more: str) -> str:
    made = tocsin("keys", "create", "--app", app, "--db", db, *more, env=clean_env(**PRIVATE))
    assert made.returncode == 0, made.stderr
    return next(line for line in made.stdout.splitlines() if line.startswith("tk_"))


def texts(sink: Receiver) -> list[str]:
    bodies = sink.stats(bodies=True)["bodies"]
    return sorted(body["text"] for body in bodies.values())


async def rung(client: httpx.AsyncClient, made: dict[str, Any], key: str) -> str:
    path = f"/v1/reminders/{made['id']}/firings"
    give_up = time.monotonic() + 30
    while time.monotonic() < give_up:
        found = (await client.get(path, headers=_bearer(key))).json()["firings"]
        if found and found[0]["state"] in ("sent", "failed", "expired"):
            return str(found[0]["state"])
        await asyncio.sleep(0.2)
    raise AssertionError(f"{made['id']} did not ring within 30 s")


def _bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


@pytest.mark.timeout(120)
async def test_an_apps_contact_gets_only_its_own_apps_rings(tmp_path: Path) -> None:
    db = str(tmp_path / "tocsin.db")
    with (
        receiver("--keep-bodies") as x_hook,
        receiver("--keep-bodies") as y_endpoint,
        receiver("--keep-bodies") as anas_hook,
    ):
        x, y = key_of("x", db), key_of("y", db, "--webhook-url", y_endpoint.url)
        token = tocsin("keys", "owner-token", "ana", "--db", db).stdout.strip()
        env = clean_env(**PRIVATE)
        with running("serve", "--db", db, env=env, log=tmp_path / "serve.log") as (base, _):
            async with httpx.AsyncClient(base_url=base, timeout=10) as client:

                async def contact(credential: str, url: str) -> None:
                    body = {"kind": "webhook", "url": url}
                    made = await client.post(
                        "/v1/owners/ana/contacts", json=body, headers=_bearer(credential)
                    )
                    assert made.status_code == 201, made.text

                async def remind(credential: str, text: str) -> dict[str, Any]:
                    at = (datetime.now(UTC) + timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
                    body = {"owner": "ana", "text": text, "zone": "UTC", "channel": "webhook"}
                    made = await client.post(
                        "/v1/reminders", json={**body, "at": at}, headers=_bearer(credential)
                    )
                    assert made.status_code == 201, made.text
                    result: dict[str, Any] = made.json()
                    return result

                await contact(x, x_hook.url)
                await contact(token, anas_hook.url)
                from_y = await remind(y, "Y-private: biopsy results call")
                from_x = await remind(x, "X: stretch")
                states = [await rung(client, from_y, y), await rung(client, from_x, x)]

        assert states == ["sent", "sent"]
        assert texts(x_hook) == ["X: stretch"]
        assert texts(y_endpoint) == ["Y-private: biopsy results call"]
        assert texts(anas_hook) == ["X: stretch", "Y-private: biopsy results call"]
