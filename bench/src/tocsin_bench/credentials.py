"""Throw-away credentials for the benchmark's local peers: a CA and a certificate for
127.0.0.1 signed by it (the peers' TLS, trusted by the engine through its `*_ca_file`
setting), and an APNs-style ES256 signing key (.p8) with its public half for the peer."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from cryptography.x509.oid import NameOID

VALID_FOR = timedelta(days=2)
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Tls:
    """Files: the CA the clients trust, the server's certificate chain and its key."""

    ca_file: Path
    cert_file: Path
    key_file: Path


@dataclass(frozen=True)
class SigningKey:
    """Files: the private key (PEM PKCS#8, as Apple's .p8) and its public half (PEM)."""

    private_file: Path
    public_file: Path


def make_tls(directory: Path) -> Tls:
    """A CA and a loopback server certificate it signed, written to `directory`."""
    now = datetime.now(UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tocsin bench CA")])
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, LOOPBACK)])
    server = (
        _builder(server_name, ca_name, server_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(LOOPBACK)), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    tls = Tls(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    tls.ca_file.write_bytes(ca.public_bytes(Encoding.PEM))
    tls.cert_file.write_bytes(server.public_bytes(Encoding.PEM))
    tls.key_file.write_bytes(_private_pem(server_key))
    return tls


def make_signing_key(directory: Path) -> SigningKey:
    """A P-256 key as Apple issues one for token auth, and its public half."""
    key = ec.generate_private_key(ec.SECP256R1())
    files = SigningKey(directory / "apns.p8", directory / "apns.pub")
    files.private_file.write_bytes(_private_pem(key))
    files.public_file.write_bytes(
        key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    )
    return files


def _builder(
    subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey, now: datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
    )


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
