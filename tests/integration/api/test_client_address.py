"""The failed-authentication limit behind a reverse proxy, through `tocsin api`: each client
behind a trusted proxy is limited on its own, a good client behind it is not locked out, and
a forwarding header from anyone else (loopback too, by default) changes nothing.

The proxy is 127.0.0.2 (every address of 127.0.0.0/8 reaches loopback on Linux). The limit
is 2 failures a minute, 1 at once: the next one is 30 s away, more than a loaded machine
takes for the requests of a test.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.support.processes import clean_env, running, tocsin

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="connects from 127.0.0.2"),
]

BAD = {"Authorization": "Bearer tk_" + "x" * 43}
LIMITED = {"TOCSIN_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE": "2"}
# uvicorn believes this variable's proxies by default: Tocsin must not.
UVICORN_TRUSTS_EVERYONE = {"FORWARDED_ALLOW_IPS": "*"}


def _key(db: str) -> dict[str, str]:
    created = tocsin("keys", "create", "--app", "phone", "--db", db)
    assert created.returncode == 0, created.stderr
    key = next(line for line in created.stdout.splitlines() if line.startswith("tk_"))
    return {"Authorization": f"Bearer {key}"}


def _from(base: str, address: str) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=base, transport=transport)


def _codes(client: httpx.Client, headers: list[dict[str, str]]) -> list[int]:
    return [client.get("/v1/reminders?owner=ana", headers=h).status_code for h in headers]


def _xff(client: str) -> dict[str, str]:
    # A client's own claim on the left, what the proxy saw appended on the right.
    return {"X-Forwarded-For": f"203.0.113.9, {client}"}


def _forwarded(client: str) -> dict[str, str]:
    return {"Forwarded": f'for=203.0.113.9, for="{client}:4711";proto=https'}


@pytest.mark.parametrize(
    ("header", "forwarding", "ignored"),
    [("x-forwarded-for", _xff, _forwarded), ("forwarded", _forwarded, _xff)],
    ids=["x-forwarded-for", "forwarded"],
)
def test_clients_behind_a_trusted_proxy_are_limited_each_on_its_own(
    tmp_path: Path,
    header: str,
    forwarding: Callable[[str], dict[str, str]],
    ignored: Callable[[str], dict[str, str]],
) -> None:
    db = str(tmp_path / "tocsin.db")
    good = _key(db)
    env = clean_env(
        TOCSIN_TRUSTED_PROXIES="127.0.0.2",
        TOCSIN_FORWARDED_HEADER=header,
        **LIMITED,
        **UVICORN_TRUSTS_EVERYONE,
    )
    with running("api", "--db", db, env=env) as (base, _), _from(base, "127.0.0.2") as proxy:
        guesser = forwarding("198.51.100.7")
        guessed = [proxy.get("/v1/reminders?owner=ana", headers=BAD | guesser) for _ in range(8)]
        # Twenty clients behind the proxy, one bad key each: none is over its own limit.
        each_once = _codes(proxy, [BAD | forwarding(f"198.51.100.{100 + n}") for n in range(20)])
        neighbour = _codes(proxy, [good | forwarding("198.51.100.8")] * 3)
        # The header that is not the one named is not read: all of these are one client.
        other_header = _codes(
            proxy, [BAD | forwarding("198.51.100.9") | ignored(f"192.0.2.{n}") for n in range(8)]
        )

    assert [answer.status_code for answer in guessed] == [401] + [429] * 7
    assert "198.51.100.7: too many failed authentications" in guessed[-1].json()["detail"]
    assert each_once == [401] * 20
    assert neighbour == [200] * 3
    assert other_header == [401] + [429] * 7


def test_a_forwarding_header_from_an_untrusted_peer_is_ignored(tmp_path: Path) -> None:
    """By default no proxy is trusted, loopback neither (uvicorn's default trusts it): bad
    keys from 127.0.0.1, each claiming another client, are one client's."""
    db = str(tmp_path / "tocsin.db")
    good = _key(db)
    env = clean_env(**LIMITED, **UVICORN_TRUSTS_EVERYONE)
    with running("api", "--db", db, env=env) as (base, _), httpx.Client(base_url=base) as direct:
        claims = [
            BAD | {"X-Forwarded-For": f"198.51.100.{n}", "Forwarded": f"for=192.0.2.{n}"}
            for n in range(8)
        ]
        guessed = [direct.get("/v1/reminders?owner=ana", headers=h) for h in claims]
        locked = _codes(direct, [good])
        with _from(base, "127.0.0.2") as elsewhere:
            other_address = _codes(elsewhere, [good])

    assert [answer.status_code for answer in guessed] == [401] + [429] * 7
    assert "127.0.0.1: too many failed authentications" in guessed[-1].json()["detail"]
    assert locked == [429]  # the address itself is over its limit
    assert other_address == [200]
