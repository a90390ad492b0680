"""Errors shared by every layer; the API turns each into an RFC 9457 problem."""

from __future__ import annotations


class TocsinError(Exception):
    """Base of every error Tocsin raises on purpose."""


class InvalidInput(TocsinError):
    """Input that cannot be accepted; `field` names where it is (`repeat`, `items.3.zone`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class StoreError(TocsinError):
    """A database failure, wrapped once at the storage boundary (the cause is the driver's)."""


class StoreUnavailable(StoreError):
    """The database cannot be reached right now; the operation may be retried."""


class SchemaTooOld(StoreError):
    """The database schema is older than this code needs: run `tocsin migrate`."""


class DuplicateIdempotencyKey(StoreError):
    """Another request saved the same idempotency key first; read its answer instead."""
