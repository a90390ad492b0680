"""Secrets at rest, on both backends: the database holds them sealed, callers get them in
clear, and `reseal_secrets` moves every one (plain text from before encryption included) to
the first key. The raw rows are read with the drivers themselves, around the store."""

from __future__ import annotations

import sqlite3
import stat
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import asyncpg
import orjson
import pytest

from tests.integration.store.factories import NOW
from tests.support.keys import TEST_KEYRING
from tests.support.raw import raw_pairs
from tests.support.secrets import raw_secrets, set_raw
from tocsin.auth import new_webhook_secret
from tocsin.domain import App, Channel, Contact
from tocsin.errors import SecretKeyMissing, SecretUnreadable
from tocsin.ids import new_reminder_id, shard_of
from tocsin.keyring import Keyring, is_sealed, new_key
from tocsin.store import Store, open_store, resealing


def app(name: str = "phone") -> App:
    return App(
        name=name,
        key_hash=f"hash-{name}",
        key_prefix="tk_ab12",
        created_at=NOW,
        webhook_url="https://example.com/hooks",
        webhook_secret=new_webhook_secret(),
    )


def contact(owner: str = "ana", n: int = 0) -> Contact:
    shard = shard_of(owner)
    return Contact(
        id=new_reminder_id(shard, NOW) + str(n),
        owner=owner,
        shard=shard,
        kind=Channel.WEBHOOK,
        address={"url": "https://example.com/ana"},
        label=None,
        secret=new_webhook_secret(),
        disabled_reason=None,
        disabled_at=None,
        created_at=NOW,
        updated_at=NOW,
    )


async def test_the_database_holds_no_secret_in_clear(store: Store, migrated_db_url: str) -> None:
    saved_app, saved_contact = app(), contact()
    await store.add_app(saved_app)
    await store.add_contact(saved_contact)
    signing = await store.ensure_secret("owner-token", "signing-secret-in-clear")

    raw = await raw_secrets(migrated_db_url)

    clear = (saved_app.webhook_secret, saved_contact.secret, signing)
    assert len(raw) == 3
    assert all(value.startswith(f"v1:{TEST_KEYRING.ids[0]}:") for value in raw.values())
    assert not any(secret in value for secret in clear if secret for value in raw.values())
    assert not any(secret in value for secret in clear if secret for value in raw)


async def test_secrets_round_trip_through_every_read(store: Store) -> None:
    saved_app, saved_contact = app(), contact()
    await store.add_app(saved_app)
    await store.add_contact(saved_contact)

    assert await store.find_app(name="phone") == saved_app
    assert await store.find_app(key_hash="hash-phone") == saved_app
    assert await store.list_apps() == [saved_app]
    assert await store.get_contact(saved_contact.id) == saved_contact
    assert await store.list_contacts("ana") == [saved_contact]
    assert await store.destinations([("ana", Channel.WEBHOOK)]) == {
        ("ana", Channel.WEBHOOK): [saved_contact]
    }
    changed = replace(saved_contact, label="work")
    assert await store.update_contact(changed) == changed
    assert await store.ensure_secret("owner-token", "first") == "first"
    assert await store.ensure_secret("owner-token", "second") == "first"


async def test_a_store_without_a_key_writes_no_secret(migrated_db_url: str) -> None:
    locked = await open_store(migrated_db_url)
    try:
        await locked.migrate()
        with pytest.raises(SecretKeyMissing, match="TOCSIN_SECRET_KEY is not set"):
            await locked.add_app(app())
        with pytest.raises(SecretKeyMissing):
            await locked.ensure_secret("owner-token", "x")
        await locked.add_app(replace(app(), webhook_url=None, webhook_secret=None))
        assert await locked.count_apps() == 1
    finally:
        await locked.close()


async def test_a_store_without_the_key_cannot_read_them(store: Store, migrated_db_url: str) -> None:
    await store.add_app(app())
    other = await open_store(migrated_db_url, keyring=Keyring.parse(new_key()))
    try:
        with pytest.raises(SecretUnreadable, match="which TOCSIN_SECRET_KEY does not hold"):
            await other.find_app(name="phone")
    finally:
        await other.close()


async def test_a_changed_sealed_value_is_refused(store: Store, migrated_db_url: str) -> None:
    await store.add_app(app())
    sealed = (await raw_secrets(migrated_db_url))["apps/phone"]
    version, kid, nonce, data = sealed.split(":")
    swapped = ":".join((version, kid, nonce, data[::-1]))
    await set_raw(migrated_db_url, "apps", "phone", swapped)

    with pytest.raises(SecretUnreadable, match="integrity check"):
        await store.find_app(name="phone")


async def test_reseal_moves_old_keys_and_plain_text_to_the_first_key(
    migrated_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resealing, "PAGE", 2)  # pages end inside and at the end of a table
    old_text, new_text = new_key(), new_key()
    old = Keyring.parse(old_text)
    legacy_app, sealed_app = app("legacy"), app("sealed")
    contacts = [contact("ana", n) for n in range(3)]
    before = await open_store(migrated_db_url, keyring=old)
    try:
        await before.migrate()
        for saved in (legacy_app, sealed_app):
            await before.add_app(saved)
        for added in contacts:
            await before.add_contact(added)
        await before.ensure_secret("owner-token", "signing")
    finally:
        await before.close()
    # What a version before encryption left behind: secrets in plain text.
    assert legacy_app.webhook_secret is not None
    await set_raw(migrated_db_url, "apps", "legacy", legacy_app.webhook_secret)
    both = Keyring.parse(f"{new_text},{old_text}")

    rotated = await open_store(migrated_db_url, keyring=both)
    try:
        first = await rotated.reseal_secrets()
        again = await rotated.reseal_secrets()
    finally:
        await rotated.close()

    assert (first.resealed, first.raced) == (6, 0)
    assert (again.resealed, again.raced) == (0, 0)
    raw = await raw_secrets(migrated_db_url)
    assert all(is_sealed(v) and v.split(":")[1] == both.ids[0] for v in raw.values())
    only_new = await open_store(migrated_db_url, keyring=Keyring.parse(new_text))
    try:
        assert await only_new.find_app(name="legacy") == legacy_app
        assert await only_new.find_app(name="sealed") == sealed_app
        assert await only_new.list_contacts("ana") == sorted(contacts, key=lambda c: c.id)
        assert await only_new.ensure_secret("owner-token", "other") == "signing"
    finally:
        await only_new.close()


async def test_reseal_names_a_row_it_cannot_open(store: Store, migrated_db_url: str) -> None:
    stranger = await open_store(migrated_db_url, keyring=Keyring.parse(new_key()))
    try:
        await stranger.add_contact(contact())
    finally:
        await stranger.close()

    with pytest.raises(SecretUnreadable, match=r"contacts\.secret of '") as raised:
        await store.reseal_secrets()
    assert "whsec_" not in str(raised.value)


def push_and_apprise(owner: str = "ana") -> list[Contact]:
    """A Web Push subscription and an Apprise URL: contacts whose address holds a credential."""
    made = contact(owner)
    return [
        replace(
            made,
            id=made.id + "p",
            kind=Channel.WEBPUSH,
            secret=None,
            address={"endpoint": "https://push.example/s/1", "p256dh": "BPk", "auth": "auth-k"},
        ),
        replace(
            made,
            id=made.id + "r",
            kind=Channel.APPRISE,
            secret=None,
            address={"url": "ntfys://token-in-clear@ntfy.example/ana"},
        ),
    ]


async def test_credentials_in_contact_addresses_are_sealed(
    store: Store, migrated_db_url: str
) -> None:
    push, apprise = push_and_apprise()
    for added in (push, apprise):
        await store.add_contact(added)
    moved = replace(apprise, address={"url": "ntfys://new-token@ntfy.example/ana"})
    await store.update_contact(moved)

    raw = dict(await raw_pairs(migrated_db_url, "SELECT id, address FROM contacts ORDER BY id"))

    assert "auth-k" not in raw[push.id]
    assert "new-token" not in raw[apprise.id]
    assert orjson.loads(raw[push.id])["endpoint"] == "https://push.example/s/1"  # findable
    assert is_sealed(orjson.loads(raw[push.id])["auth"])
    assert await store.get_contact(push.id) == push
    assert await store.list_contacts("ana", kind=Channel.APPRISE) == [moved]
    assert await store.destinations([("ana", Channel.WEBPUSH)]) == {
        ("ana", Channel.WEBPUSH): [push]
    }


async def test_reseal_seals_addresses_saved_in_clear(store: Store, migrated_db_url: str) -> None:
    push, apprise = push_and_apprise()
    for added in (push, apprise):
        await store.add_contact(added)
    # What a version before sealed addresses left behind: the credential in clear.
    await set_raw_address(migrated_db_url, push.id, orjson.dumps(push.address).decode())

    first = await store.reseal_secrets()
    again = await store.reseal_secrets()

    raw = dict(await raw_pairs(migrated_db_url, "SELECT id, address FROM contacts ORDER BY id"))
    assert (first.resealed, again.resealed) == (1, 0)
    assert "auth-k" not in raw[push.id]
    assert await store.get_contact(push.id) == push


async def set_raw_address(url: str, contact_id: str, address: str) -> None:
    if url.startswith("sqlite"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as connection, connection:
            connection.execute(
                "UPDATE contacts SET address = ? WHERE id = ?", (address, contact_id)
            )
        return
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(
            "UPDATE contacts SET address = $1 WHERE id = $2", address, contact_id
        )
    finally:
        await connection.close()


async def test_a_new_sqlite_database_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "tocsin.db"
    opened = await open_store(f"sqlite:///{path}", keyring=TEST_KEYRING)
    try:
        await opened.migrate()
        await opened.add_contact(contact())
        files = [path, *(path.with_name(path.name + end) for end in ("-wal", "-shm"))]
        modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in files}
    finally:
        await opened.close()
    assert modes == {"tocsin.db": 0o600, "tocsin.db-wal": 0o600, "tocsin.db-shm": 0o600}
