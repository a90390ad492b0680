"""A local SMTP submission server for `tocsin bench … --channel email` (aiosmtpd, one process).

    python -m tocsin_bench.smtp_peer --cert server.pem --key server.key --stats stats.json

It asks what a relay asks of a submitting client: STARTTLS before anything else, then AUTH
(PLAIN or LOGIN, the user and password printed at start), one sender, recipients, the
message. Each message accepted is counted by its `X-Tocsin-Firing` header (a second
acceptance of one firing for one recipient is a duplicate). On SIGTERM it writes what it saw
to `--stats` (JSON) and exits; it prints `listening on PORT USER PASSWORD` once it accepts
connections.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import secrets
import signal
import ssl
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import uvloop
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

USERNAME = "bench"
FIRING_HEADER = re.compile(rb"^X-Tocsin-Firing: (\S+)\r?$", re.MULTILINE)

# aiosmtpd logs a deprecation of its own `Session.login_data` at each AUTH, which it sets itself.
logging.getLogger("mail.log").setLevel(logging.ERROR)


@dataclass
class Tally:
    """What arrived, over every connection."""

    connections: int = 0
    logins: int = 0
    accepted: int = 0
    seen: dict[tuple[bytes, str], int] = field(default_factory=dict)  # (firing, rcpt) -> n

    def stats(self) -> dict[str, Any]:
        unique = len(self.seen)
        return {
            "connections": self.connections,
            "logins": self.logins,
            "accepted": self.accepted,
            "unique": unique,
            "duplicates": self.accepted - unique,
        }


class Handler:
    """aiosmtpd's hooks: accept each message and count it."""

    def __init__(self, tally: Tally, password: str) -> None:
        self.tally = tally
        self.password = password

    async def handle_DATA(  # noqa: N802 (aiosmtpd's hook name)
        self, server: SMTP, session: Session, envelope: Envelope
    ) -> str:
        content = envelope.content
        assert isinstance(content, bytes)
        found = FIRING_HEADER.search(content)
        if found is None:
            return "554 5.6.0 no X-Tocsin-Firing header"
        tally = self.tally
        for recipient in envelope.rcpt_tos:
            key = (found.group(1), recipient)
            tally.seen[key] = tally.seen.get(key, 0) + 1
            tally.accepted += 1
        return f"250 2.0.0 Ok: queued as Q{tally.accepted}"

    def authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
    ) -> AuthResult:
        if (
            isinstance(auth_data, LoginPassword)
            and auth_data.login.decode() == USERNAME
            and secrets.compare_digest(auth_data.password.decode(), self.password)
        ):
            self.tally.logins += 1
            return AuthResult(success=True, auth_data=USERNAME)
        return AuthResult(success=False, handled=False)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tocsin_bench.smtp_peer", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--cert", type=Path, required=True, help="server certificate (PEM)")
    parser.add_argument("--key", type=Path, required=True, help="its private key (PEM)")
    parser.add_argument("--stats", type=Path, required=True, help="JSON written on SIGTERM")
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    tally = Tally()
    handler = Handler(tally, secrets.token_urlsafe(16))
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(args.cert, args.key)

    def protocol() -> SMTP:
        tally.connections += 1
        return SMTP(
            handler,
            hostname="peer.tocsin.bench",
            tls_context=tls,
            require_starttls=True,
            auth_required=True,
            auth_require_tls=True,
            authenticator=handler.authenticate,
        )

    loop = asyncio.get_running_loop()
    server = await loop.create_server(protocol, args.host, args.port, backlog=1024)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on {port} {USERNAME} {handler.password}", flush=True)
    await stop.wait()
    server.close()
    args.stats.write_bytes(orjson.dumps(tally.stats()))


def main(argv: Sequence[str] | None = None) -> int:
    uvloop.run(serve(parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
