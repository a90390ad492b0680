"""Storage: one async interface (`Store`) and its SQLite and PostgreSQL backends."""

from __future__ import annotations

from tocsin.store.base import Store

__all__ = ["Store", "open_store"]


async def open_store(url: str) -> Store:
    """Connect to the database at `url` (`sqlite:///file.db` or `postgresql://…`)."""
    if url.startswith(("postgresql://", "postgres://")):
        from tocsin.store.postgres import PostgresStore

        return await PostgresStore.connect(url)
    if url.startswith("sqlite://"):
        from tocsin.store.sqlite import SqliteStore

        return await SqliteStore.connect(url)
    raise ValueError(f"unsupported database URL {url!r}: use sqlite:///… or postgresql://…")
