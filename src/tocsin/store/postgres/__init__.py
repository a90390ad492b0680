"""The PostgreSQL backend (`postgresql://user@host:port/database`)."""

from tocsin.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
