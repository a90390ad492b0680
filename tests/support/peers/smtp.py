"""A real SMTP server for the email channel's tests: aiosmtpd on loopback, with STARTTLS or
implicit TLS under a throw-away CA, AUTH required, and 4xx/5xx replies on demand (as text, or
as raw bytes: a server whose replies are not UTF-8).

It runs in the test's event loop (`smtp_peer`), or alone in its own process for a
measurement (`python -m tests.support.peers.smtp`, which prints its port and the CA file).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import sys
import tempfile
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any, Literal

import trustme
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

USERNAME = "tocsin"
PASSWORD = "correct horse battery staple"
HOST = "127.0.0.1"

Tls = Literal["starttls", "implicit", "none"]

# aiosmtpd logs a deprecation of its own `Session.login_data` at each AUTH, which it sets itself.
logging.getLogger("mail.log").setLevel(logging.ERROR)


@dataclass(frozen=True, kw_only=True)
class Received:
    """One message the server accepted, with how it came."""

    mail_from: str
    rcpt_tos: list[str]
    mail_options: list[str]
    content: bytes
    connection: int  # which connection carried it (1, 2, … in the order they were opened)
    tls: bool  # whether the line was encrypted when the message came
    login: str | None  # the user name it logged in with

    def message(self) -> EmailMessage:
        parsed = BytesParser(policy=policy.default).parsebytes(self.content)
        assert isinstance(parsed, EmailMessage)
        return parsed


@dataclass
class Certificates:
    """A throw-away CA and a server certificate for 127.0.0.1 and localhost."""

    ca: trustme.CA = field(default_factory=trustme.CA)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert(HOST, "localhost").configure_cert(context)
        return context

    def write_ca(self, directory: Path) -> Path:
        """The CA's certificate as a PEM file, for TOCSIN_SMTP_CA_FILE."""
        path = directory / "smtp-ca.pem"
        self.ca.cert_pem.write_to_path(str(path))
        return path


class SmtpPeer:
    """The server's state: what it received, and what the test tells it to answer."""

    def __init__(self, tls: Tls, certificates: Certificates) -> None:
        self.tls: Tls = tls
        self.certificates = certificates
        self.port = 0
        self.received: list[Received] = []
        self.refuse: dict[str, str | bytes] = {}  # recipient -> the reply to its RCPT
        self.data_reply: str | bytes | None = None  # the reply to DATA instead of 250, when set
        self.data_delay = 0.0  # seconds to wait before answering DATA
        self.connections = 0
        self._protocols: list[SMTP] = []
        self._context = certificates.server_context() if tls != "none" else None

    def protocol(self) -> SMTP:
        """One connection's SMTP state machine (the server's protocol factory)."""
        self.connections += 1
        number = self.connections
        with warnings.catch_warnings():
            # aiosmtpd only counts STARTTLS as encryption and warns about AUTH without it;
            # with implicit TLS the whole connection is encrypted, which `Received.tls` shows.
            warnings.filterwarnings("ignore", "Requiring AUTH while not requiring TLS")
            smtp = SMTP(
                _Handler(self, number),
                hostname="peer.tocsin.test",
                tls_context=self._context if self.tls == "starttls" else None,
                require_starttls=self.tls == "starttls",
                auth_required=self.tls != "none",
                auth_require_tls=self.tls == "starttls",
                authenticator=_authenticate,
                enable_SMTPUTF8=True,
            )
        self._protocols.append(smtp)
        return smtp

    def drop_connections(self) -> None:
        """Close every open connection from the server's side, as an idle timeout does."""
        for smtp in self._protocols:
            if smtp.transport is not None:
                smtp.transport.close()
        self._protocols.clear()

    @property
    def server_ssl(self) -> ssl.SSLContext | None:
        return self._context if self.tls == "implicit" else None


class _Handler:
    def __init__(self, peer: SmtpPeer, connection: int) -> None:
        self._peer = peer
        self._connection = connection

    async def handle_RCPT(  # noqa: N802 (aiosmtpd's hook name)
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        rcpt_options: list[str],
    ) -> str | bytes:
        refusal = self._peer.refuse.get(address)
        if refusal is not None:
            return refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(  # noqa: N802 (aiosmtpd's hook name)
        self, server: SMTP, session: Session, envelope: Envelope
    ) -> str | bytes:
        if self._peer.data_delay:
            await asyncio.sleep(self._peer.data_delay)
        if self._peer.data_reply is not None:
            return self._peer.data_reply
        assert envelope.mail_from is not None
        assert isinstance(envelope.content, bytes)
        transport = server.transport
        self._peer.received.append(
            Received(
                mail_from=envelope.mail_from,
                rcpt_tos=list(envelope.rcpt_tos),
                mail_options=list(envelope.mail_options),
                content=envelope.content,
                connection=self._connection,
                tls=transport is not None and transport.get_extra_info("ssl_object") is not None,
                login=session.auth_data if isinstance(session.auth_data, str) else None,
            )
        )
        return f"250 2.0.0 Ok: queued as Q{len(self._peer.received)}"


def _authenticate(
    server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
) -> AuthResult:
    if (
        isinstance(auth_data, LoginPassword)
        and auth_data.login.decode() == USERNAME
        and auth_data.password.decode() == PASSWORD
    ):
        return AuthResult(success=True, auth_data=USERNAME)
    return AuthResult(success=False, handled=False)


@asynccontextmanager
async def smtp_peer(
    tls: Tls = "starttls", certificates: Certificates | None = None
) -> AsyncIterator[SmtpPeer]:
    """An SMTP server on 127.0.0.1 (a free port) in this event loop, for the block's time."""
    peer = SmtpPeer(tls, certificates or Certificates())
    loop = asyncio.get_running_loop()
    server = await loop.create_server(peer.protocol, HOST, 0, ssl=peer.server_ssl)
    peer.port = server.sockets[0].getsockname()[1]
    try:
        yield peer
    finally:
        server.close()
        peer.drop_connections()
        await server.wait_closed()


async def _serve_forever(tls: Tls) -> None:
    certificates = Certificates()
    directory = Path(tempfile.mkdtemp(prefix="tocsin-smtp-peer-"))
    async with smtp_peer(tls, certificates) as peer:
        ca = certificates.write_ca(directory)
        print(peer.port, ca, flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    modes: dict[str, Tls] = {"starttls": "starttls", "implicit": "implicit", "none": "none"}
    asyncio.run(_serve_forever(modes[sys.argv[1] if len(sys.argv) > 1 else "starttls"]))
