"""The local provider peers of the firing benchmarks for the contact channels: APNs
(`tocsin_bench.apns_peer`) and SMTP (`tocsin_bench.smtp_peer`), each its own process under
a throw-away CA, with the worker settings that point the engine at it, the contact every
benchmark owner gets, and what the peer counted (read once it was stopped)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from tocsin.domain import Channel, Contact
from tocsin.ids import new_reminder_id, shard_of
from tocsin.store.ports import ContactStore
from tocsin_bench.credentials import make_signing_key, make_tls
from tocsin_bench.processes import Process

APNS_KEY_ID = "BENCHKEY01"
APNS_TEAM_ID = "BENCHTEAM1"
APNS_TOPIC = "dev.tocsin.bench"
SMTP_FROM = "Tocsin bench <alerts@bench.tocsin.dev>"
CONTACT_CHANNELS = frozenset({Channel.APNS.value, Channel.EMAIL.value})


@dataclass
class Peer:
    """A running peer: its process, the workers' settings for it, and its stats file."""

    kind: Channel
    process: Process
    settings: dict[str, str]
    stats_file: Path
    extra: dict[str, Any] = field(default_factory=dict)

    def address(self, owner_number: int) -> dict[str, str]:
        """The contact address of the benchmark's `owner_number`th owner."""
        if self.kind is Channel.APNS:
            return {"token": f"{owner_number:064x}", "environment": "production"}
        return {"address": f"owner{owner_number}@bench.tocsin.dev"}

    def stats(self) -> dict[str, Any]:
        """What the peer counted; call after `process.stop()`."""
        if not self.stats_file.exists():
            raise RuntimeError(f"the {self.kind} peer left no stats: see its log")
        stats: dict[str, Any] = orjson.loads(self.stats_file.read_bytes())
        return stats


def start_peer(kind: Channel, logs: Path) -> Peer:
    """Start the peer of `kind` (apns or email) with fresh credentials under `logs`."""
    tls = make_tls(logs)
    stats_file = logs / f"{kind}-peer-stats.json"
    tls_args = ["--cert", str(tls.cert_file), "--key", str(tls.key_file)]
    if kind is Channel.APNS:
        key = make_signing_key(logs)
        args = [
            *tls_args,
            *("--public-key", str(key.public_file), "--key-id", APNS_KEY_ID),
            *("--team-id", APNS_TEAM_ID, "--topic", APNS_TOPIC, "--stats", str(stats_file)),
        ]
        process, words = _spawn("apns-peer", "tocsin_bench.apns_peer", args, logs)
        settings = {
            "apns_key_file": str(key.private_file),
            "apns_key_id": APNS_KEY_ID,
            "apns_team_id": APNS_TEAM_ID,
            "apns_topic": APNS_TOPIC,
            "apns_base_url": words[0],
            "apns_ca_file": str(tls.ca_file),
        }
        return Peer(kind, process, settings, stats_file)
    if kind is Channel.EMAIL:
        args = [*tls_args, "--stats", str(stats_file)]
        process, words = _spawn("smtp-peer", "tocsin_bench.smtp_peer", args, logs)
        port, username, password = words
        settings = {
            "smtp_host": "127.0.0.1",
            "smtp_port": port,
            "smtp_tls": "starttls",
            "smtp_username": username,
            "smtp_password": password,
            "smtp_from": SMTP_FROM,
            "smtp_ca_file": str(tls.ca_file),
        }
        return Peer(kind, process, settings, stats_file)
    raise ValueError(f"no benchmark peer for the {kind} channel")


def _spawn(name: str, module: str, args: Sequence[str], logs: Path) -> tuple[Process, list[str]]:
    """Start `python -m module args`; the words after `listening on` in its first line."""
    log = (logs / f"{name}.log").open("wb")
    popen = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", module, *args], stdout=subprocess.PIPE, stderr=log
    )
    process = Process(name=name, popen=popen, log=log)
    assert popen.stdout is not None
    line = popen.stdout.readline().decode()
    if not line.startswith("listening on "):
        process.stop()
        raise RuntimeError(f"the {name} did not start: {line!r} (see {logs / name}.log)")
    return process, line.removeprefix("listening on ").split()


def owner_name(number: int) -> str:
    return f"bench-owner-{number}"


async def add_contacts(store: ContactStore, peer: Peer, owners: int) -> None:
    """One contact of the peer's kind for each of the benchmark's `owners` owners."""
    now = datetime.now(UTC)
    for number in range(owners):
        owner = owner_name(number)
        shard = shard_of(owner)
        await store.add_contact(
            Contact(
                id=new_reminder_id(shard, now),
                owner=owner,
                shard=shard,
                kind=peer.kind,
                address=peer.address(number),
                label=None,
                secret=None,
                disabled_reason=None,
                disabled_at=None,
                created_at=now,
                updated_at=now,
            )
        )
