"""The SQLite backend (`sqlite:///path/to/file.db`)."""

from tocsin.store.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
