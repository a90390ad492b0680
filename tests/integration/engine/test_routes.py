"""Rings on several channels at once and along fallback chains, through a running engine to
real local peers: the webhook receiver (its own process) and an SMTP server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest

from tests.integration.engine.support import (
    Receiver,
    add_contact,
    eventually,
    firings_of,
    receiver,
    reminder,
    running,
    settings,
)
from tests.support.peers.smtp import SmtpPeer, smtp_peer
from tocsin.clock import SystemClock
from tocsin.domain import Channel, Firing, FiringState, Outcome, Reminder, Route
from tocsin.settings import Settings
from tocsin.store import Store

clock = SystemClock()
SOON = timedelta(seconds=2)
BOTH = Route((Channel.WEBHOOK, Channel.EMAIL))
EMAIL_THEN_WEBHOOK = Route((Channel.EMAIL, Channel.WEBHOOK), fallback=True)
WEBHOOK_THEN_EMAIL = Route((Channel.WEBHOOK, Channel.EMAIL), fallback=True)


@dataclass(frozen=True)
class Peers:
    sink: Receiver
    smtp: SmtpPeer
    config: Settings


@pytest.fixture
async def peers(tmp_path: Path) -> AsyncIterator[Peers]:
    async with smtp_peer("none") as smtp:
        with receiver("--keep-bodies") as sink:
            config = settings(
                webhook_url=f"{sink.url}/hook",
                smtp_host="127.0.0.1",
                smtp_port=smtp.port,
                smtp_tls="none",
                smtp_from="rings@tocsin.example",
            )
            yield Peers(sink=sink, smtp=smtp, config=config)


async def email_contact(store: Store, owner: str) -> None:
    await add_contact(
        store, owner, Channel.EMAIL, {"address": f"{owner}@example.org"}, now=clock.now()
    )


def ringing(owner: str, route: Route) -> Reminder:
    """A reminder of `owner`'s due in a moment on `route`."""
    now = clock.now()
    return reminder(owner, now=now, at=now.replace(microsecond=0) + SOON, channel=route)


async def rung(store: Store, config: Settings, *reminders: Reminder) -> list[Firing]:
    await store.add_reminders(list(reminders))
    async with running(store, config, clock):

        async def done() -> bool:
            found = [await firings_of(store, r.id) for r in reminders]
            return all(f and f[0].state.is_final for f in found)

        await eventually(done, within=20)
        return [(await firings_of(store, r.id))[0] for r in reminders]


def mailed(peer: SmtpPeer, firing: Firing) -> list[str]:
    """The recipients of the messages `firing` sent."""
    return [
        address
        for message in peer.received
        if firing.id in str(message.message()["Message-ID"])
        for address in message.rcpt_tos
    ]


async def hooked(peers: Peers) -> list[str]:
    """The firings the webhook receiver accepted (signed, each once)."""
    stats = await peers.sink.astats(bodies=True)
    assert stats["duplicates"] == stats["invalid"] == 0
    return sorted(stats["bodies"])


def steps(firing: Firing) -> list[tuple[Channel, Outcome, bool]]:
    """Each attempt's channel, outcome and whether it reached a destination."""
    return [(a.channel, a.outcome, a.destination is not None) for a in firing.history]


async def test_every_channel_rings_under_one_identity(store: Store, peers: Peers) -> None:
    await email_contact(store, "ana")

    [firing] = await rung(store, peers.config, ringing("ana", BOTH))

    assert firing.state is FiringState.SENT
    assert sorted(steps(firing)) == [
        (Channel.EMAIL, Outcome.SENT, True),
        (Channel.WEBHOOK, Outcome.SENT, True),
    ]
    assert mailed(peers.smtp, firing) == ["ana@example.org"]
    assert await hooked(peers) == [firing.id]


async def test_a_chain_moves_on_only_when_a_step_failed_for_good(
    store: Store, peers: Peers
) -> None:
    """bo's address is refused for good (550): the webhook rings instead. cy's webhook
    accepts: its email is never tried. di has no address: straight to the webhook, the
    history saying email had nowhere to go. eve's whole chain fails: failed, saying why."""
    for owner in ("bo", "cy", "eve"):
        await email_contact(store, owner)
    peers.smtp.refuse["bo@example.org"] = "550 5.1.1 no such user"
    peers.smtp.refuse["eve@example.org"] = "550 5.1.1 no such user"
    no_sms = Route((Channel.EMAIL, Channel.SMS), fallback=True)
    refused, first_worked, nowhere, all_failed = await rung(
        store,
        peers.config,
        ringing("bo", EMAIL_THEN_WEBHOOK),
        ringing("cy", WEBHOOK_THEN_EMAIL),
        ringing("di", EMAIL_THEN_WEBHOOK),
        ringing("eve", no_sms),
    )

    assert refused.state is first_worked.state is nowhere.state is FiringState.SENT
    assert steps(refused) == [
        (Channel.EMAIL, Outcome.FAILED, True),
        (Channel.WEBHOOK, Outcome.SENT, True),
    ]
    assert steps(first_worked) == [(Channel.WEBHOOK, Outcome.SENT, True)]
    assert mailed(peers.smtp, first_worked) == []
    assert steps(nowhere) == [
        (Channel.EMAIL, Outcome.FAILED, False),
        (Channel.WEBHOOK, Outcome.SENT, True),
    ]
    assert (nowhere.history[0].error or "").startswith("no-destination: di has no email")
    assert await hooked(peers) == sorted([refused.id, first_worked.id, nowhere.id])
    assert all_failed.state is FiringState.FAILED
    assert steps(all_failed) == [
        (Channel.EMAIL, Outcome.FAILED, True),
        (Channel.SMS, Outcome.FAILED, False),
    ]
    assert (all_failed.last_error or "").startswith("every step failed for good: email: ")
    assert "sms: channel sms not configured" in (all_failed.last_error or "")


async def test_a_step_being_retried_holds_the_chain(store: Store, peers: Peers) -> None:
    """A temporary refusal (451) is retried on the same step; once the address takes it,
    the webhook after it is never tried."""
    await email_contact(store, "fay")
    peers.smtp.refuse["fay@example.org"] = "451 4.3.0 try again later"
    one = ringing("fay", EMAIL_THEN_WEBHOOK)
    await store.add_reminders([one])
    async with running(store, peers.config, clock):

        async def tried() -> bool:
            firings = await firings_of(store, one.id)
            return bool(firings and firings[0].attempts)

        await eventually(tried)
        del peers.smtp.refuse["fay@example.org"]

        async def done() -> bool:
            return (await firings_of(store, one.id))[0].state.is_final

        await eventually(done, within=20)
    [firing] = await firings_of(store, one.id)

    assert firing.state is FiringState.SENT
    assert {channel for channel, _, _ in steps(firing)} == {Channel.EMAIL}
    assert steps(firing)[0][1] is Outcome.RETRY
    assert mailed(peers.smtp, firing) == ["fay@example.org"]
    assert await hooked(peers) == []
