"""Who may hold the in-app feed open, through running servers: a revocation ends an owner's
open feeds (and refuses the tickets made before it), a cross-site page cannot take the
waiting rings in dev mode, the demo token ends with dev mode, and one owner holds a bounded
number of connections."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.workers import workers
from tests.support.processes import clean_env, running, tocsin
from tests.support.sse import FeedClient, feed

pytestmark = [pytest.mark.slow, pytest.mark.long]

FAST = {"TOCSIN_FEED_HEARTBEAT_SECONDS": "1"}
# Every wait below is a bound a loaded 2-core machine cannot eat: the heartbeat's check and
# the 5 s a process trusts what it read about revocations, with room to spare.
WITHIN = 20.0


@dataclass
class Server:
    """A running server with an app key; `db` the arguments that name its database."""

    client: httpx.AsyncClient
    db: tuple[str, ...]
    key: str

    @property
    def app(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    async def keys(self, *command: str) -> str:
        """`tocsin keys …` as its own process on the server's database; what it printed."""
        done = await asyncio.to_thread(tocsin, "keys", *command, *self.db)
        assert done.returncode == 0, done.stderr
        return done.stdout

    async def ticket(self, owner: str, token: str) -> str:
        made = await self.client.post(
            f"/v1/owners/{owner}/feed/tickets", headers={"Authorization": f"Bearer {token}"}
        )
        assert made.status_code == 201, made.text
        ticket: str = made.json()["ticket"]
        return ticket

    async def ring(self, owner: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        """An in-app reminder of `owner`'s due in a second or two."""
        at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
        body = {
            "owner": owner,
            "text": f"for {owner}",
            "zone": "UTC",
            "channel": "inapp",
            "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        made = await self.client.post("/v1/reminders", json=body, headers=headers)
        assert made.status_code == 201, made.text
        created: dict[str, Any] = made.json()
        return created

    async def state(
        self, made: dict[str, Any], wanted: str, headers: dict[str, str] | None = None
    ) -> None:
        path = f"/v1/reminders/{made['id']}/firings"
        give_up = time.monotonic() + WITHIN
        found: list[dict[str, Any]] = []
        while time.monotonic() < give_up:
            found = (await self.client.get(path, headers=headers)).json()["firings"]
            if found and found[0]["state"] == wanted:
                return
            await asyncio.sleep(0.2)
        raise AssertionError(f"not {wanted} after {WITHIN} s: {found}")


@asynccontextmanager
async def client_of(base: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base, timeout=10) as client:
        yield client


async def ends(page: FeedClient) -> None:
    """The stream ends within `WITHIN` seconds, with no event on the way."""
    try:
        event = await page.next_event(within=WITHIN)
    except EOFError:
        return
    raise AssertionError(f"an event came instead of the end: {event}")


async def refused(
    client: httpx.AsyncClient, owner: str, *, headers: dict[str, str], params: dict[str, str]
) -> dict[str, Any]:
    """The 401 problem a feed request gets, waiting out the time another process may still
    trust what it last read."""
    give_up = time.monotonic() + WITHIN
    while True:
        async with client.stream(
            "GET", f"/v1/owners/{owner}/feed", headers=headers, params=params
        ) as answer:
            if answer.status_code == 401:
                await answer.aread()
                assert answer.headers["content-type"] == "application/problem+json"
                problem: dict[str, Any] = answer.json()
                return problem
        assert time.monotonic() < give_up, f"still {answer.status_code} after {WITHIN} s"
        await asyncio.sleep(0.5)


async def revocation_ends_open_feeds(server: Server, *, heard_at_once: bool) -> None:
    """bob's open feeds (one by ticket, as a page opens it, one by his token) end after
    `tocsin keys revoke-owner bob` in another process; no ring made after the revocation
    reaches them; the ticket made before it, and the token, are refused; ana's feed stays.
    Where the revocation is heard at once (PostgreSQL), a ring made right after it must not
    come through before the end; elsewhere (SQLite) the heartbeat's check ends the feed."""
    bob = (await server.keys("owner-token", "bob", "--ttl", "1h")).strip()
    ana = (await server.keys("owner-token", "ana", "--ttl", "1h")).strip()
    ticket = await server.ticket("bob", bob)
    async with (
        feed(server.client, "bob", ticket=ticket) as page,
        feed(server.client, "bob", token=bob) as by_header,
        feed(server.client, "ana", token=ana) as other,
    ):
        for opened in (page, by_header, other):
            assert opened.response.status_code == 200
            await opened.next_comment(within=WITHIN)  # the stream is up: a heartbeat came
        printed = await server.keys("revoke-owner", "bob")
        assert "open feeds end" in printed
        early = await server.ring("bob", server.app) if heard_at_once else None
        await ends(page)
        await ends(by_header)
        # The page's reconnect (its ticket, well within its minute) and its token: refused.
        again = await refused(server.client, "bob", headers={}, params={"ticket": ticket})
        assert again["detail"] == "the feed ticket has been revoked: ask for a new one"
        token = await refused(
            server.client, "bob", headers={"Authorization": f"Bearer {bob}"}, params={}
        )
        assert token["detail"] == "the owner token has been revoked: ask for a new one"
        late = await server.ring("bob", server.app)
        for made in (early, late):
            if made is not None:
                await server.state(made, "queued", server.app)  # nobody took it
        await server.ring("ana", server.app)
        assert (await other.next_event(within=WITHIN)).json()["owner"] == "ana"
    fresh = (await server.keys("owner-token", "bob", "--ttl", "1h")).strip()
    async with feed(server.client, "bob", ticket=await server.ticket("bob", fresh)) as page:
        assert page.response.status_code == 200


def _key(*db: str) -> str:
    created = tocsin("keys", "create", "--app", "phone", *db)
    assert created.returncode == 0, created.stderr
    return next(line for line in created.stdout.splitlines() if line.startswith("tk_"))


@pytest.mark.timeout(150)
async def test_a_revocation_ends_the_feeds_of_tocsin_serve(tmp_path: Path) -> None:
    db = ("--db", str(tmp_path / "tocsin.db"))
    key = _key(*db)
    env = clean_env(**FAST)
    with running("serve", *db, env=env, log=tmp_path / "serve.log") as (base, _):
        async with client_of(base) as client:
            server = Server(client=client, db=db, key=key)
            await revocation_ends_open_feeds(server, heard_at_once=False)


@pytest.mark.postgres
@pytest.mark.timeout(150)
async def test_a_revocation_ends_the_feeds_of_every_api_process(
    pg_migrated_url: str, tmp_path: Path
) -> None:
    """Two API processes on one port and a worker apart: NOTIFY tocsin_revocations reaches
    whichever holds the feeds."""
    db = ("--db", pg_migrated_url)
    key = _key(*db)
    env = clean_env(**FAST)
    with (
        workers(tmp_path) as started,
        running("api", *db, "--workers", "2", env=env, log=tmp_path / "api.log") as (base, _),
    ):
        started.start(pg_migrated_url, "w1")
        async with client_of(base) as client:
            server = Server(client=client, db=db, key=key)
            await revocation_ends_open_feeds(server, heard_at_once=True)


@contextmanager
def dev_mode(folder: Path, **settings: str) -> Iterator[tuple[str, str]]:
    """`tocsin serve` with no API key (loopback dev mode): its base URL and the demo token
    its sign-in link carries."""
    log = folder / "serve.log"
    env = clean_env(**FAST, **settings)
    with running("serve", "--db", str(folder / "tocsin.db"), env=env, log=log) as (base, _):
        line = next(x for x in log.read_text().splitlines() if "Try the reminders page" in x)
        yield base, line.rpartition("#token=")[2]


async def status_of(client: httpx.AsyncClient, owner: str, headers: dict[str, str]) -> int:
    """The status a feed request gets (a stream that opens is closed at once)."""
    async with client.stream("GET", f"/v1/owners/{owner}/feed", headers=headers) as answer:
        if answer.status_code != 200:
            await answer.aread()
            assert answer.headers["content-type"] == "application/problem+json"
            assert answer.json()["type"] == "urn:tocsin:problem:cross-origin-write"
        return answer.status_code


@pytest.mark.timeout(90)
async def test_in_dev_mode_a_cross_site_page_cannot_take_the_waiting_rings(
    tmp_path: Path,
) -> None:
    """Without keys anyone on this machine reads any feed, but not a web page of another
    site: its feed request is a 403, as a write is, and the ring stays queued for the
    owner's own page."""
    with dev_mode(tmp_path) as (base, _):
        async with client_of(base) as client:
            server = Server(client=client, db=(), key="")
            made = await server.ring("ana")
            await server.state(made, "queued")
            foreign = [
                {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
                {"Origin": "https://evil.example"},
                {"Sec-Fetch-Site": "same-site"},
                {"Origin": "http://localhost:1"},  # another port is another origin
            ]
            for headers in foreign:
                assert await status_of(client, "ana", headers) == 403, headers
            await server.state(made, "queued")
            same_origin = {"Origin": base, "Sec-Fetch-Site": "same-origin"}
            async with feed(client, "ana") as page:
                assert (await page.next_event(within=WITHIN)).json()["reminder_id"] == made["id"]
            await server.state(made, "sent")
            assert await status_of(client, "ana", same_origin) == 200


async def _get(client: httpx.AsyncClient, token: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return await client.get("/v1/reminders", params={"owner": "demo"}, headers=headers)


async def _refused_within(client: httpx.AsyncClient, token: str) -> str:
    give_up = time.monotonic() + WITHIN
    while (answer := await _get(client, token)).status_code != 401:
        assert time.monotonic() < give_up, f"still {answer.status_code} after {WITHIN} s"
        await asyncio.sleep(0.2)
    detail: str = answer.json()["detail"]
    return detail


@pytest.mark.timeout(120)
async def test_the_demo_token_ends_with_dev_mode_and_is_revocable(tmp_path: Path) -> None:
    """The token the sign-in link carries works in dev mode; `tocsin keys revoke-owner demo`
    refuses it and ends its open feed. The next start prints a fresh one; once an API key
    exists it is refused (a 401 that says why), the feed it opened ends, and so does one
    opened by its ticket."""
    db = ("--db", str(tmp_path / "tocsin.db"))
    with dev_mode(tmp_path) as (base, demo):
        async with client_of(base) as client:
            assert (await _get(client, demo)).status_code == 200
            async with feed(client, "demo", token=demo) as page:
                await page.next_comment(within=WITHIN)
                done = await asyncio.to_thread(tocsin, "keys", "revoke-owner", "demo", *db)
                assert done.returncode == 0, done.stderr
                await ends(page)
            detail = await _refused_within(client, demo)
            assert detail == "the owner token has been revoked: ask for a new one"
    with dev_mode(tmp_path) as (base, fresh):
        async with client_of(base) as client:
            server = Server(client=client, db=db, key="")
            assert (await _get(client, fresh)).status_code == 200
            ticket = await server.ticket("demo", fresh)
            async with (
                feed(client, "demo", token=fresh) as page,
                feed(client, "demo", ticket=ticket) as by_ticket,
            ):
                await page.next_comment(within=WITHIN)
                await by_ticket.next_comment(within=WITHIN)
                server.key = await asyncio.to_thread(_key, *db)
                await ends(page)
                await ends(by_ticket)
            detail = await _refused_within(client, fresh)
            assert "works only while the server runs on loopback without API keys" in detail
            assert (await _get(client, server.key)).status_code == 200


@pytest.mark.timeout(90)
async def test_an_owner_holds_a_bounded_number_of_feed_connections(tmp_path: Path) -> None:
    """With a cap of 2, ana's third feed connection is a 429 problem that names her and the
    setting; bob's is not counted with hers; once one of hers closes, a new one opens."""
    path = "/v1/owners/ana/feed"
    with dev_mode(tmp_path, TOCSIN_MAX_FEED_CONNECTIONS_PER_OWNER="2") as (base, _):
        async with client_of(base) as client, AsyncExitStack() as held:
            first = AsyncExitStack()
            opened = [
                await first.enter_async_context(client.stream("GET", path)),
                await held.enter_async_context(client.stream("GET", path)),
            ]
            assert [answer.status_code for answer in opened] == [200, 200]
            async with client.stream("GET", path) as third:
                await third.aread()
            assert third.status_code == 429
            assert third.headers["content-type"] == "application/problem+json"
            problem = third.json()
            assert problem["type"] == "urn:tocsin:problem:too-many-feed-connections"
            assert problem["detail"].startswith("ana has 2 feed connections open")
            assert "TOCSIN_MAX_FEED_CONNECTIONS_PER_OWNER" in problem["detail"]
            async with feed(client, "bob") as bob:
                assert bob.response.status_code == 200
            await first.aclose()
            give_up = time.monotonic() + WITHIN
            while True:
                async with client.stream("GET", path) as again:
                    if again.status_code == 200:
                        break
                assert time.monotonic() < give_up, "no connection freed"
                await asyncio.sleep(0.2)
