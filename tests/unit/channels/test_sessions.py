"""The CAs the HTTP channels verify their peers with."""

from __future__ import annotations

import ssl
from pathlib import Path

import trustme

from tocsin.channels.sessions import trusting


def test_a_ca_file_replaces_the_systems_cas_or_adds_to_them(tmp_path: Path) -> None:
    ca_file = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(str(ca_file))
    systems = ssl.create_default_context().cert_store_stats()["x509_ca"]

    instead = trusting(ca_file)
    as_well = trusting(ca_file, also_the_systems=True)

    assert trusting(None) is None  # aiohttp's default: the system's
    assert instead is not None
    assert as_well is not None
    assert instead.cert_store_stats()["x509_ca"] == 1
    assert as_well.cert_store_stats()["x509_ca"] == systems + 1
    assert instead.verify_mode is ssl.CERT_REQUIRED
    assert instead.check_hostname
