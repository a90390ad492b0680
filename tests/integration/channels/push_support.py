"""What the push channel tests share: a firing to send, and throw-away TLS and signing keys."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from tests.support.peers.apns import ApnsPeer
from tests.support.peers.apns import serving as apns_serving
from tocsin.domain import JSON, Channel, Firing, FiringState, one

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def firing(
    number: int = 1,
    *,
    channel: Channel,
    due_at: datetime = T0,
    freshness: timedelta = timedelta(minutes=10),
    text: str = "Water the plants",
    metadata: JSON | None = None,
) -> Firing:
    """A firing of reminder `r…{number}` due at `due_at`, being sent."""
    reminder_id = f"06h2hgqf2y7g{number:08d}"
    return Firing(
        id=f"{reminder_id}.{int(due_at.timestamp())}",
        reminder_id=reminder_id,
        owner="ana",
        shard=7,
        due_at=due_at,
        deadline=due_at + freshness,
        channel=one(channel),
        text=text,
        metadata=metadata,
        source="phone",
        state=FiringState.SENDING,
        attempts=0,
        next_attempt_at=None,
        sender="worker-1",
        lease_until=due_at + timedelta(seconds=30),
        created_at=due_at,
    )


@dataclass(frozen=True, kw_only=True)
class ServerCertificate:
    """A throw-away CA and a certificate it issued for 127.0.0.1 and localhost."""

    ca_file: Path
    cert_file: Path
    key_file: Path

    def server_tls(self) -> ssl.SSLContext:
        """What a peer serves TLS with: this certificate."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(self.cert_file), str(self.key_file))
        return context


def server_certificate(folder: Path) -> ServerCertificate:
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1", "localhost")
    paths = ServerCertificate(
        ca_file=folder / "ca.pem", cert_file=folder / "server.pem", key_file=folder / "server.key"
    )
    ca.cert_pem.write_to_path(str(paths.ca_file))
    issued.cert_chain_pems[0].write_to_path(str(paths.cert_file))
    issued.private_key_pem.write_to_path(str(paths.key_file))
    return paths


def write_pem(key: PrivateKeyTypes, path: Path) -> Path:
    """`key` as an unencrypted PKCS#8 PEM file (the form of Apple's .p8 and Google's keys)."""
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


@asynccontextmanager
async def local_apns(folder: Path, topic: str) -> AsyncIterator[tuple[ApnsPeer, dict[str, str]]]:
    """An APNs over TLS on loopback that trusts a fresh signing key and takes `topic`, and
    the settings (`TOCSIN_APNS_…`) that point a running Tocsin at it."""
    key = ec.generate_private_key(ec.SECP256R1())
    peer = ApnsPeer(
        public_key=key.public_key(),
        key_id="ABC123DEFG",
        team_id="DEF123GHIJ",
        topics=frozenset({topic}),
    )
    certificate = server_certificate(folder)
    served = apns_serving(
        peer, certfile=str(certificate.cert_file), keyfile=str(certificate.key_file)
    )
    async with served as url:
        yield (
            peer,
            {
                "TOCSIN_APNS_KEY_FILE": str(write_pem(key, folder / "AuthKey.p8")),
                "TOCSIN_APNS_KEY_ID": peer.key_id,
                "TOCSIN_APNS_TEAM_ID": peer.team_id,
                "TOCSIN_APNS_TOPIC": topic,
                "TOCSIN_APNS_BASE_URL": url,
                "TOCSIN_APNS_SANDBOX_BASE_URL": url,
                "TOCSIN_APNS_CA_FILE": str(certificate.ca_file),
            },
        )
