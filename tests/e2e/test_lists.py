"""A shared list's rings through the running service (`tocsin serve` on SQLite; `tocsin api`
and a `tocsin worker` on PostgreSQL).

Ana makes a list and invites Ben (editor) and Cy (viewer); Ben accepts, Cy does not yet. Each
saved a webhook contact of his own, a receiver each. A reminder Ben saves in the list rings
Ana's and Ben's contacts, once each, under one identity, and never Cy's (an invitation rings
nobody); one assigned to Ana rings hers alone. Then Cy accepts and Ben leaves: the next ring
goes to Ana and Cy, and none to Ben.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.service import iso, service
from tests.integration.engine.support import Receiver, eventually, receiver
from tests.support.processes import clean_env, tocsin

pytestmark = [pytest.mark.slow, pytest.mark.long]

SETTINGS = {"TOCSIN_ALLOW_PRIVATE_URLS": "true"}  # the receivers listen on loopback
PEOPLE = ("ana", "ben", "cy")


def _token(owner: str, db: str) -> dict[str, str]:
    made = tocsin("keys", "owner-token", owner, "--db", db, env=clean_env(**SETTINGS))
    assert made.returncode == 0, made.stderr
    return {"Authorization": f"Bearer {made.stdout.strip()}"}


def _ok(answer: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    body: dict[str, Any] = answer.json() if answer.content else {}
    return body


async def _arrivals(sink: Receiver) -> set[str]:
    """The delivery identities that reached `sink`, each asserted to have arrived once."""
    arrivals: dict[str, list[Any]] = (await sink.astats(ids=True))["arrivals"]
    assert all(len(times) == 1 for times in arrivals.values()), arrivals
    return set(arrivals)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_a_lists_rings_go_to_the_members_who_joined_each_on_his_own_contacts(
    kind: str, pg_migrated_url: str, tmp_path: Path
) -> None:
    db = str(tmp_path / "tocsin.db") if kind == "sqlite" else pg_migrated_url
    with (
        receiver() as default,
        receiver() as ana_sink,
        receiver() as ben_sink,
        receiver() as cy_sink,
        service(kind, tmp_path, pg_migrated_url, default, SETTINGS) as base,
    ):
        sinks = dict(zip(PEOPLE, (ana_sink, ben_sink, cy_sink), strict=True))
        ana, ben, cy = [await asyncio.to_thread(_token, owner, db) for owner in PEOPLE]
        tokens = dict(zip(PEOPLE, (ana, ben, cy), strict=True))
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            for owner in PEOPLE:
                contact = {"kind": "webhook", "url": sinks[owner].url}
                path = f"/v1/owners/{owner}/contacts"
                _ok(await client.post(path, json=contact, headers=tokens[owner]), 201)
            shared = _ok(await client.post("/v1/lists", json={"name": "Home"}, headers=ana), 201)
            members = f"/v1/lists/{shared['id']}/members"
            for member, role in (("ben", "editor"), ("cy", "viewer")):
                _ok(await client.put(f"{members}/{member}", json={"role": role}, headers=ana))
            _ok(await client.post(f"{members}/ben/accept", headers=ben))

            async def remind(by: dict[str, str], **fields: Any) -> dict[str, Any]:
                at = iso(datetime.now(UTC) + timedelta(seconds=3))
                body = {"list": shared["id"], "zone": "UTC", "channel": "webhook", "at": at}
                return _ok(await client.post("/v1/reminders", json=body | fields, headers=by), 201)

            async def sent(made: dict[str, Any]) -> str:
                """The id of the reminder's ring once it was sent to every destination."""
                path = f"/v1/reminders/{made['id']}/firings"

                async def done() -> bool:
                    found = (await client.get(path, headers=ana)).json()["firings"]
                    return bool(found) and found[0]["state"] not in ("queued", "sending")

                await eventually(done, within=60, every=0.5)
                firing = (await client.get(path, headers=ana)).json()["firings"][0]
                assert firing["state"] == "sent", firing
                return str(firing["id"])

            everyone = await remind(ben, text="Bins out")
            anas = await remind(ben, text="Ana: call the plumber", assignee="ana")
            first, assigned = await sent(everyone), await sent(anas)

            assert await _arrivals(ana_sink) == {first, assigned}
            assert await _arrivals(ben_sink) == {first}
            assert await _arrivals(cy_sink) == set()  # invited, not joined: nothing
            assert first.startswith(everyone["id"])  # one identity a ring, at every member

            _ok(await client.post(f"{members}/cy/accept", headers=cy))
            _ok(await client.delete(f"{members}/ben", headers=ben), 204)
            later = await sent(await remind(ana, text="Water the plants"))

            assert await _arrivals(ana_sink) == {first, assigned, later}
            assert await _arrivals(ben_sink) == {first}  # he left: no later ring
            assert await _arrivals(cy_sink) == {later}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_nothing_of_a_deleted_list_due_after_its_delete_answered_rings(
    kind: str, pg_migrated_url: str, tmp_path: Path
) -> None:
    """Twenty-four reminders of a list, three due each second for eight seconds, and the
    list deleted around the fourth: a ring claimed before the delete may go, but none due
    after the delete's answer arrives (each ring's identity carries its due second)."""
    db = str(tmp_path / "tocsin.db") if kind == "sqlite" else pg_migrated_url
    with (
        receiver() as default,
        receiver() as ana_sink,
        service(kind, tmp_path, pg_migrated_url, default, SETTINGS) as base,
    ):
        ana = await asyncio.to_thread(_token, "ana", db)
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            contact = {"kind": "webhook", "url": ana_sink.url}
            _ok(await client.post("/v1/owners/ana/contacts", json=contact, headers=ana), 201)
            shared = _ok(await client.post("/v1/lists", json={"name": "Home"}, headers=ana), 201)
            start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=6)
            body = {"list": shared["id"], "zone": "UTC", "channel": "webhook", "text": "tick"}
            items = [body | {"at": iso(start + timedelta(seconds=n // 3))} for n in range(24)]
            batch = _ok(
                await client.post("/v1/reminders:batch", json={"items": items}, headers=ana)
            )
            assert batch["created"] == 24, batch

            await asyncio.sleep((start + timedelta(seconds=4) - datetime.now(UTC)).total_seconds())
            deleted = await client.delete(f"/v1/lists/{shared['id']}", headers=ana)
            answered = datetime.now(UTC)
            assert deleted.status_code == 204, deleted.text

            await asyncio.sleep(10)  # every one of them is due by then
            arrivals = await _arrivals(ana_sink)
            dues = sorted(int(firing.rpartition(".")[2]) for firing in arrivals)
            assert all(due <= answered.timestamp() for due in dues), (dues, answered)
            assert (await client.get(f"/v1/lists/{shared['id']}", headers=ana)).status_code == 404
