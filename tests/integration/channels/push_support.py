"""What the push channel tests share: a firing to send, and throw-away TLS and signing keys."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

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
