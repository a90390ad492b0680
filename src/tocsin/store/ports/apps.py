"""The apps' port: apps and their API keys, revoked owner tokens, and stored secrets."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from tocsin.domain import App


@dataclass(frozen=True, kw_only=True, slots=True)
class Resealed:
    """What one `AppStore.reseal_secrets` pass did."""

    resealed: int  # values sealed again with the ring's first key
    raced: int  # values another process changed between the read and the write: pass again


class AppStore(Protocol):
    """Apps (their API keys and webhook endpoints), the lines drawn under owners' tokens,
    and the secrets every process sharing the database shares."""

    @abstractmethod
    async def add_app(self, app: App) -> None:
        """Save an app and its key hash. An app's name is unique: `StoreError` if taken."""

    @abstractmethod
    async def find_app(self, *, name: str | None = None, key_hash: str | None = None) -> App | None:
        """The app with this name or key hash (exactly one of them given), or None."""

    @abstractmethod
    async def list_apps(self) -> list[App]:
        """Every app (API key), by name."""

    @abstractmethod
    async def count_apps(self) -> int:
        """How many apps (API keys) exist, revoked ones too: 0 means the server runs without
        keys, and revoking every key must not reopen it."""

    @abstractmethod
    async def revoke_app(self, name: str, at: datetime) -> bool:
        """Refuse the app's key from `at` on (`App.revoked_at`); its reminders still ring.
        False when no such app exists or it is revoked already."""

    @abstractmethod
    async def replace_app_key(self, name: str, *, key_hash: str, key_prefix: str) -> bool:
        """Give the app a new key: the old one is refused from now on, and a revoked app is
        live again. False when no such app exists."""

    @abstractmethod
    async def disable_webhook(self, name: str) -> None:
        """Mark the app's webhook endpoint disabled (it answered 410 Gone)."""

    @abstractmethod
    async def revoke_owner_tokens(self, owner: str, before: datetime) -> None:
        """Refuse every owner token of `owner` signed at or before `before` (a later
        revocation moves the line forward; an earlier one never moves it back), and tell
        `listen_revocations` listeners after the commit."""

    @abstractmethod
    async def owner_tokens_revoked_before(self, owner: str) -> datetime | None:
        """The line `revoke_owner_tokens` drew for `owner`, or None if it never did."""

    @abstractmethod
    async def ensure_secret(self, name: str, value: str) -> str:
        """Save `value` (sealed) under `name` unless a value is saved already; return the
        saved one, opened. Every process sharing the database gets the same secret
        (owner-token signing). `SecretUnreadable` when the ring cannot open the saved one."""

    @abstractmethod
    async def reseal_secrets(self) -> Resealed:
        """One pass over every stored secret (apps' webhook secrets, contacts' secrets, the
        `secrets` table): each value not sealed with the ring's first key — plain text from
        before encryption, or sealed with another key of the ring — is opened and sealed
        with the first key. Pages in key order, each written in one short transaction by
        conditional updates that apply only while the stored value is still the one read,
        so it is safe beside running processes: a value changed meanwhile is left and
        counted `raced` (pass again). `SecretUnreadable`, naming the row, when a value is
        sealed with a key the ring does not hold; the pages before it stay done."""
