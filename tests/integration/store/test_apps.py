"""Apps (API keys) and shared secrets, on both backends."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

import pytest

from tests.integration.store.factories import NOW
from tests.support.keys import TEST_KEYRING
from tocsin.domain import App
from tocsin.errors import StoreError
from tocsin.store import Store, open_store


def app(name: str = "phone", key_hash: str = "hash-1") -> App:
    return App(
        name=name,
        key_hash=key_hash,
        key_prefix="tcs_ab12",
        created_at=NOW,
        webhook_url="https://example.com/hooks",
        webhook_secret="whsec_c2VjcmV0",
    )


async def test_apps_are_found_by_name_or_key_hash(store: Store) -> None:
    assert await store.count_apps() == 0
    await store.add_app(app())
    await store.add_app(App(name="calendar", key_hash="hash-2", key_prefix="tcs_x", created_at=NOW))

    assert await store.count_apps() == 2
    assert await store.find_app(name="phone") == app()
    assert await store.find_app(key_hash="hash-1") == app()
    assert await store.find_app(name="nobody") is None
    assert await store.find_app(key_hash="nothing") is None


async def test_apps_are_listed_by_name(store: Store) -> None:
    assert await store.list_apps() == []
    calendar = App(name="calendar", key_hash="hash-2", key_prefix="tcs_x", created_at=NOW)
    await store.add_app(app())
    await store.add_app(calendar)
    await store.disable_webhook("phone")

    listed = await store.list_apps()

    assert [a.name for a in listed] == ["calendar", "phone"]
    assert listed[0] == calendar
    assert listed[1].webhook_disabled is True
    assert listed[1].webhook_url == "https://example.com/hooks"


async def test_find_app_wants_exactly_one_key(store: Store) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        await store.find_app()
    with pytest.raises(ValueError, match="exactly one"):
        await store.find_app(name="phone", key_hash="hash-1")


async def test_names_and_key_hashes_are_unique(store: Store) -> None:
    await store.add_app(app())

    with pytest.raises(StoreError, match="phone"):
        await store.add_app(app(key_hash="hash-9"))
    with pytest.raises(StoreError):
        await store.add_app(app(name="other"))
    assert await store.count_apps() == 1


async def test_disable_webhook(store: Store) -> None:
    await store.add_app(app())

    await store.disable_webhook("phone")
    await store.disable_webhook("nobody")

    found = await store.find_app(name="phone")
    assert found is not None
    assert found.webhook_disabled is True


async def test_the_first_secret_saved_wins(store: Store, migrated_db_url: str) -> None:
    other = await open_store(migrated_db_url, keyring=TEST_KEYRING)
    try:
        values = await asyncio.gather(
            store.ensure_secret("owner-token", "first"),
            other.ensure_secret("owner-token", "second"),
            store.ensure_secret("owner-token", "third"),
        )
    finally:
        await other.close()

    assert len(set(values)) == 1
    assert await store.ensure_secret("owner-token", "later") == values[0]
    assert await store.ensure_secret("another", "x") == "x"


async def test_a_revoked_app_keeps_its_row_until_a_new_key(store: Store) -> None:
    await store.add_app(app())
    later = NOW + timedelta(hours=1)

    assert await store.revoke_app("phone", later)
    assert not await store.revoke_app("phone", later + timedelta(hours=1))  # already
    assert not await store.revoke_app("nobody", later)
    revoked = await store.find_app(key_hash="hash-1")
    assert revoked is not None
    assert revoked.revoked_at == later
    assert await store.count_apps() == 1  # revoking never reopens a keyless server

    assert await store.replace_app_key("phone", key_hash="hash-2", key_prefix="tk_new")
    assert not await store.replace_app_key("nobody", key_hash="hash-3", key_prefix="tk_x")
    assert await store.find_app(key_hash="hash-1") is None
    assert await store.find_app(key_hash="hash-2") == replace(
        app(), key_hash="hash-2", key_prefix="tk_new"
    )


async def test_owner_token_revocations_only_move_forward(store: Store) -> None:
    assert await store.owner_tokens_revoked_before("ana") is None
    await store.revoke_owner_tokens("ana", NOW)
    await store.revoke_owner_tokens("ana", NOW - timedelta(days=1))
    assert await store.owner_tokens_revoked_before("ana") == NOW
    await store.revoke_owner_tokens("ana", NOW + timedelta(seconds=1))
    assert await store.owner_tokens_revoked_before("ana") == NOW + timedelta(seconds=1)
    assert await store.owner_tokens_revoked_before("bob") is None
