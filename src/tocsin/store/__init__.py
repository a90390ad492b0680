"""Storage: small ports by concern (`ports`), the `Store` that inherits them all, and its SQLite
and PostgreSQL backends."""

from __future__ import annotations

from tocsin.keyring import Keyring
from tocsin.store.base import Store

__all__ = ["Store", "open_store"]


async def open_store(
    url: str, *, keyring: Keyring | None = None, acquire_timeout: float | None = None
) -> Store:
    """Connect to the database at `url` (`sqlite:///file.db` or `postgresql://…`). Stored
    secrets are sealed and opened with `keyring`; without one (`tocsin migrate`), any
    sealed secret read or written is refused (`SecretKeyMissing`). On PostgreSQL a call
    that waits longer than `acquire_timeout` seconds for a pooled connection fails with
    `StoreUnavailable` (None: it waits as long as it takes)."""
    ring = Keyring.locked() if keyring is None else keyring
    if url.startswith(("postgresql://", "postgres://")):
        from tocsin.store.postgres import PostgresStore

        return await PostgresStore.connect(url, keyring=ring, acquire_timeout=acquire_timeout)
    if url.startswith("sqlite://"):
        from tocsin.store.sqlite import SqliteStore

        return await SqliteStore.connect(url, keyring=ring)
    raise ValueError(f"unsupported database URL {url!r}: use sqlite:///… or postgresql://…")
