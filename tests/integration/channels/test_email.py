"""The email channel against a real SMTP server (aiosmtpd): TLS, AUTH, the message as it
arrives, how each reply is classified, time limits and kept connections."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.channels.firing_factory import DUE, destination, firing
from tests.integration.store.factories import LEASE, NOW, claim, reminder
from tests.support.peers.smtp import PASSWORD, USERNAME, Certificates, SmtpPeer, Tls, smtp_peer
from tocsin.channels import email as email_channel
from tocsin.channels.base import DeliveryResult
from tocsin.channels.email import EmailSender
from tocsin.clock import SystemClock
from tocsin.delivery.attempt import attempt_of
from tocsin.domain import AttemptResult, Channel, FiringState, Outcome
from tocsin.settings import Settings
from tocsin.store import Store

FROM = "Tocsin <alerts@tocsin.example.com>"
ADA = "ada@example.com"


def settings(peer: SmtpPeer | None, ca_file: Path | None, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": "sqlite:///unused.db",
        "smtp_host": "127.0.0.1",
        "smtp_port": peer.port if peer is not None else None,
        "smtp_tls": peer.tls if peer is not None else "starttls",
        "smtp_username": USERNAME,
        "smtp_password": PASSWORD,
        "smtp_from": FROM,
        "smtp_ca_file": str(ca_file) if ca_file is not None else None,
        "smtp_pool": 2,
        "smtp_timeout_seconds": 5.0,
    }
    values.update(overrides)
    return Settings(**values)


def sender_for(config: Settings) -> EmailSender:
    sender = email_channel.build(config, SystemClock())
    assert sender is not None
    return sender


@pytest.fixture
def certificates() -> Certificates:
    return Certificates()


@pytest.fixture
def ca_file(certificates: Certificates, tmp_path: Path) -> Path:
    return certificates.write_ca(tmp_path)


@pytest.fixture
async def peer(certificates: Certificates) -> AsyncIterator[SmtpPeer]:
    async with smtp_peer("starttls", certificates) as running:
        yield running


@pytest.fixture
async def sender(peer: SmtpPeer, ca_file: Path) -> AsyncIterator[EmailSender]:
    sending = sender_for(settings(peer, ca_file))
    try:
        yield sending
    finally:
        await sending.close()


async def send(sender: EmailSender, address: str = ADA) -> DeliveryResult:
    return await sender.send(
        firing(channel=Channel.EMAIL), destination(Channel.EMAIL, address=address), time_limit=5.0
    )


async def send_once(config: Settings) -> DeliveryResult:
    """One ring sent by a sender made for it, closed after."""
    sender = sender_for(config)
    try:
        return await send(sender)
    finally:
        await sender.close()


async def test_a_ring_arrives_over_starttls_after_auth(sender: EmailSender, peer: SmtpPeer) -> None:
    ring = firing(channel=Channel.EMAIL, text='Pay rent <b>"now"</b> & smile, ça\nsecond line')

    result = await sender.send(ring, destination(Channel.EMAIL, address=ADA), time_limit=5.0)

    assert result.outcome is Outcome.SENT
    assert result.provider_id == "2.0.0 Ok: queued as Q1"
    [received] = peer.received
    assert received.tls
    assert received.login == USERNAME
    assert received.mail_from == "alerts@tocsin.example.com"
    assert received.rcpt_tos == [ADA]
    message = received.message()
    assert message["Message-ID"] == f"<{ring.id}@tocsin.example.com>"
    assert message["X-Tocsin-Firing"] == ring.id
    assert message["From"] == FROM
    assert message["To"] == ADA
    assert message["Subject"] == 'Pay rent <b>"now"</b> & smile, ça second line'
    assert message["Date"].datetime == DUE
    assert message["Auto-Submitted"] == "auto-generated"
    text, html = (part.get_content().replace("\r\n", "\n") for part in message.iter_parts())
    assert text == 'Pay rent <b>"now"</b> & smile, ça\nsecond line\n\nDue 2026-03-02 09:00 UTC.\n'
    assert "Pay rent &lt;b&gt;&quot;now&quot;&lt;/b&gt; &amp; smile, ça<br>" in html
    assert "<b>" not in html
    assert [part.get_content_type() for part in message.iter_parts()] == [
        "text/plain",
        "text/html",
    ]


@pytest.mark.parametrize("tls", ["implicit", "none"])
async def test_implicit_tls_and_a_plain_local_relay(
    tls: Tls, certificates: Certificates, ca_file: Path
) -> None:
    async with smtp_peer(tls, certificates) as peer:
        # The plain relay (on the same host, say) takes mail without AUTH.
        login = {} if tls == "implicit" else {"smtp_username": None, "smtp_password": None}
        result = await send_once(settings(peer, ca_file, **login))
    assert result.outcome is Outcome.SENT
    [received] = peer.received
    assert received.tls == (tls == "implicit")
    assert received.login == (USERNAME if tls == "implicit" else None)


async def test_a_repeat_is_the_same_message(sender: EmailSender, peer: SmtpPeer) -> None:
    ring = firing(channel=Channel.EMAIL)
    to_ada = destination(Channel.EMAIL, address=ADA)

    first = await sender.send(ring, to_ada, time_limit=5.0)
    again = await sender.send(ring, to_ada, time_limit=5.0)

    assert first.outcome is again.outcome is Outcome.SENT
    assert peer.received[0].content == peer.received[1].content


async def test_connections_are_kept_and_shared_by_concurrent_sends(
    sender: EmailSender, peer: SmtpPeer
) -> None:
    results = await asyncio.gather(*(send(sender, f"user{n}@example.com") for n in range(40)))
    results.append(await send(sender))

    assert {result.outcome for result in results} == {Outcome.SENT}
    assert len(peer.received) == 41
    assert peer.connections == 2  # the pool's size: every other send reused one
    assert {received.connection for received in peer.received} == {1, 2}


@pytest.mark.parametrize(
    ("stage", "reply", "outcome"),
    [
        ("RCPT", "450 4.2.1 Mailbox busy, try later", Outcome.RETRY),
        ("RCPT", "452 4.2.2 Over quota", Outcome.RETRY),
        ("RCPT", "550 5.1.1 No such user here", Outcome.FAILED),
        ("RCPT", "553 5.1.3 Mailbox name not allowed", Outcome.FAILED),
        ("DATA", "451 4.3.0 Local error in processing", Outcome.RETRY),
        ("DATA", "554 5.6.0 Rejected", Outcome.FAILED),
    ],
)
async def test_a_refusal_by_reply_class(
    sender: EmailSender, peer: SmtpPeer, stage: str, reply: str, outcome: Outcome
) -> None:
    if stage == "RCPT":
        peer.refuse[ADA] = reply
    else:
        peer.data_reply = reply

    result = await send(sender)

    assert result.outcome is outcome
    assert result.error == (f"recipient refused: {reply}" if stage == "RCPT" else f"SMTP {reply}")
    assert not result.gone  # an address is never disabled on an SMTP reply
    assert peer.received == []
    # The refusal left the connection sound: the next send goes on the same one.
    peer.data_reply = None
    assert (await send(sender, "bob@example.com")).outcome is Outcome.SENT
    assert peer.connections == 1


@pytest.mark.parametrize(
    ("stage", "reply", "kept"),
    [
        ("DATA", b"250 2.0.0 queued as \xff\xfe\x00Q1", "2.0.0 queued as \ufffd\ufffd\ufffdQ1"),
        ("DATA", b"451 4.3.0 try \xe9 later\x00", "SMTP 451 4.3.0 try \ufffd later\ufffd"),
        ("DATA", b"554 5.7.1 refus\xe9 \x1b[2J", "SMTP 554 5.7.1 refus\ufffd \ufffd[2J"),
        ("RCPT", b"550 5.1.1 \xff\x00", "recipient refused: 550 5.1.1 \ufffd\ufffd"),
    ],
)
async def test_a_reply_that_is_not_utf_8_is_recorded_as_clean_text(
    sender: EmailSender, peer: SmtpPeer, store: Store, stage: str, reply: bytes, kept: str
) -> None:
    """aiosmtplib keeps the bytes of a reply that is not UTF-8 as lone surrogates, which no
    JSON batch can carry (nor a NUL PostgreSQL's jsonb): the result holds clean text, and the
    store records it."""
    if stage == "RCPT":
        peer.refuse[ADA] = reply
    else:
        peer.data_reply = reply

    outcome = await send(sender)
    target = reminder()
    await store.add_reminders([target])
    [rung] = await store.claim([claim(target)], sender="worker-1", now=NOW, lease=LEASE)
    to_ada = destination(Channel.EMAIL, address=ADA)
    attempt = attempt_of(1, NOW, Channel.EMAIL, to_ada, outcome)
    state = FiringState.SENT if outcome.outcome is Outcome.SENT else FiringState.FAILED
    written = AttemptResult(
        rung.id, "worker-1", state, attempt, firing=None if rung.stored else rung
    )
    recorded = await store.record_attempts([written])
    [firing_] = await store.list_firings(target.id)

    assert (outcome.provider_id or outcome.error) == kept
    assert recorded == 1
    assert firing_.state is state
    assert (firing_.provider_id or firing_.last_error) == kept


async def test_a_wrong_password_fails_as_a_configuration_error(
    peer: SmtpPeer, ca_file: Path
) -> None:
    wrong = "not-the-password-1234"
    result = await send_once(settings(peer, ca_file, smtp_password=wrong))

    assert result.outcome is Outcome.FAILED
    assert result.error is not None
    assert "535" in result.error
    assert "TOCSIN_SMTP_PASSWORD" in result.error
    assert wrong not in result.error
    assert peer.received == []


async def test_starttls_is_required_not_tried(certificates: Certificates, ca_file: Path) -> None:
    async with smtp_peer("none", certificates) as plain:  # offers no STARTTLS
        result = await send_once(settings(plain, ca_file, smtp_tls="starttls"))

        assert result.outcome is Outcome.FAILED
        assert result.error is not None
        assert "STARTTLS" in result.error
        assert plain.received == []


async def test_a_server_certificate_from_an_untrusted_ca_fails(peer: SmtpPeer) -> None:
    result = await send_once(settings(peer, None))  # the system's CAs: not the test's

    assert result.outcome is Outcome.FAILED
    assert result.error is not None
    assert "TOCSIN_SMTP_CA_FILE" in result.error
    assert peer.received == []


async def test_a_slow_server_is_cut_at_the_time_limit(sender: EmailSender, peer: SmtpPeer) -> None:
    peer.data_delay = 5.0
    started = time.monotonic()

    result = await sender.send(
        firing(channel=Channel.EMAIL), destination(Channel.EMAIL, address=ADA), time_limit=0.3
    )

    assert time.monotonic() - started < 1.0
    assert result.outcome is Outcome.RETRY
    assert result.error == "timeout after 0.3 s"
    # The cut connection is not used again: what the server made of it is unknown.
    peer.data_delay = 0.0
    assert (await send(sender)).outcome is Outcome.SENT
    assert peer.received[-1].connection == 2


async def test_no_server_listening_is_retried(ca_file: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = await send_once(settings(None, ca_file, smtp_port=port))

    assert result.outcome is Outcome.RETRY
    assert result.error is not None
    assert result.error.startswith("connection error: ")


@pytest.mark.parametrize("noticed", [True, False])
async def test_a_connection_the_server_closed_is_replaced(
    sender: EmailSender, peer: SmtpPeer, noticed: bool
) -> None:
    assert (await send(sender)).outcome is Outcome.SENT
    peer.drop_connections()
    if noticed:  # the close reached the client before the next send, or not yet
        await asyncio.sleep(0.05)

    result = await send(sender, "bob@example.com")

    assert result.outcome is Outcome.SENT
    assert [received.connection for received in peer.received] == [1, 2]


async def test_an_international_domain_goes_as_idna(sender: EmailSender, peer: SmtpPeer) -> None:
    assert (await send(sender, "ada@bücher.example.com")).outcome is Outcome.SENT

    [received] = peer.received
    assert received.rcpt_tos == ["ada@xn--bcher-kva.example.com"]
    assert not any(option.upper() == "SMTPUTF8" for option in received.mail_options)
    assert received.message()["To"] == "ada@xn--bcher-kva.example.com"


@pytest.mark.parametrize(
    "address", ["ada@example.com\r\nBcc: eve@example.com", "josé@example.com", "", "ada"]
)
async def test_an_address_that_was_never_valid_is_not_sent_to(
    sender: EmailSender, peer: SmtpPeer, address: str
) -> None:
    result = await send(sender, address)

    assert result.outcome is Outcome.FAILED
    assert peer.connections == 0


def test_build_needs_host_and_sender() -> None:
    clock = SystemClock()
    assert email_channel.build(Settings(database_url="sqlite:///unused.db"), clock) is None
    with pytest.raises(ValueError, match="TOCSIN_SMTP_FROM is not set"):
        email_channel.build(Settings(smtp_host="mail.example.com"), clock)
    with pytest.raises(ValueError, match="go together"):
        email_channel.build(
            Settings(smtp_host="mail.example.com", smtp_from=FROM, smtp_username="u"), clock
        )
    with pytest.raises(ValueError, match="TOCSIN_SMTP_FROM is not a usable address"):
        email_channel.build(Settings(smtp_host="mail.example.com", smtp_from="tocsin"), clock)
