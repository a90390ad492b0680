"""Who is calling: an app (API key), a person (owner token) or, in loopback mode, anyone."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta

from tocsin.api.problems import Problem
from tocsin.auth import (
    API_KEY_PREFIX,
    OWNER_CREDENTIAL_PREFIX,
    OwnerToken,
    hash_api_key,
    owner_token_secret,
    read_feed_ticket,
    read_owner_token,
    sign_feed_ticket,
)
from tocsin.clock import Clock
from tocsin.domain import Priority, Reminder
from tocsin.store.ports import AppStore

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="tocsin"'}
# How long this process trusts what the store said about keys (see `Authenticator`).
KEY_TTL = timedelta(seconds=5)
OPEN_TTL = timedelta(seconds=1)
MAX_CACHED_KEYS = 4096


@dataclass(frozen=True, kw_only=True, slots=True)
class Principal:
    """The caller. `owner` is set for an owner token: the only owner it may see or change."""

    scope: str  # keeps idempotency keys of different callers apart
    source: str | None = None  # the app's name, recorded on the reminders it saves
    owner: str | None = None
    admin: bool = False  # an admin key: sees and changes every app's reminders
    # What `Authenticator.still_admits` checks again for a feed that stays open:
    key_hash: str | None = None  # an app's key, refused once revoked or rotated away
    signed: datetime | None = None  # an owner credential's, refused by a later revocation
    dev_only: bool = False  # admitted only while the server runs in loopback dev mode
    priority: Priority = Priority.URGENT  # of the reminders it saves without one (the app's)

    def may_see(self, owner: str) -> bool:
        """Whether the caller may act for `owner` (its contacts, its list of reminders)."""
        return self.owner is None or self.owner == owner

    @property
    def tenant(self) -> str | None:
        """The app whose reminders alone this caller sees, or None: apps are tenants. An
        owner token sees its owner's reminders from every app, an admin key all."""
        return None if self.admin or self.owner is not None else self.source

    def may_see_reminder(self, reminder: Reminder) -> bool:
        """Whether the caller may see and change this reminder."""
        tenant = self.tenant
        return self.may_see(reminder.owner) and (tenant is None or reminder.source == tenant)


ANONYMOUS = Principal(scope="anonymous", dev_only=True)
# Who follows a ring's action link (`tocsin.actions`): the link is the authority, for the
# one ring it names, so it acts as whoever may change any reminder, on that ring alone.
LINK_HOLDER = Principal(scope="action-link", admin=True)


class Authenticator:
    """Turns an `Authorization` header into a `Principal`, or a 401 problem.

    `open_allowed` says the server listens on loopback only: then, as long as no API key
    exists, requests without a key are accepted. Keys are never deleted, so once one is seen
    that is remembered and the store is not asked again.

    Asking the store on every request was a database round trip per request (a seventh of a
    create's cost), so answers are kept in the process for a short time, and only answers
    whose staleness cannot let in a caller the store would now refuse for long:

    - A key found in the store is trusted for `KEY_TTL` (5 s) by its hash, and so is what
      the store says about an owner's revoked tokens: a key revoked or rotated away, or an
      owner's tokens revoked (`tocsin keys revoke`, `rotate`, `revoke-owner`, run in another
      process), keeps working for at most that long in each API process — less for an
      owner's tokens where the store tells of the revocation (`forget_owner`).
    - A key not found is never cached. Caching it would not make a wrong key pass, but a key
      created a moment later would be refused until the entry expired; and an attacker trying
      random keys hits a fresh entry every time anyway. So a new key works at once.
    - "No API key exists" (the open, loopback-only mode) is the one negative answer kept, for
      `OPEN_TTL` (1 s): it is what admits requests without a key, so after the first key is
      created, keyless requests from this machine may still pass for up to 1 s. It is never
      consulted off loopback, and once any key is seen the mode is closed for good.

    Expiry is judged by the injected clock; an entry from the future (the clock went back) is
    treated as expired.

    The demo token and the tickets made in dev mode (`OwnerToken.dev_only`), like requests
    without a key, are admitted only while `is_open`: they end when the server leaves dev
    mode.
    """

    def __init__(self, store: AppStore, clock: Clock, *, secret: str | None, open_allowed: bool):
        self._store = store
        self._clock = clock
        self._secret = secret
        self._open_allowed = open_allowed
        self._keys_exist = False
        self._open_checked: datetime | None = None
        self._apps: dict[str, tuple[datetime, Principal | None]] = {}
        self._revoked: dict[str, tuple[datetime, datetime | None]] = {}
        self._revocations_heard = 0  # `forget_owner` calls: a read begun before one is stale
        self._secret_lock = asyncio.Lock()

    async def authenticate(self, authorization: str | None) -> Principal:
        if authorization:
            token = _bearer(authorization)
            principal = await self._verify(token) if token else None
            if principal is None:
                raise unauthorized("the API key or owner token is not valid")
            return principal
        if await self.is_open():
            return ANONYMOUS
        raise unauthorized("send Authorization: Bearer <API key or owner token>")

    async def is_open(self) -> bool:
        """Whether requests without a key are accepted right now (as of at most `OPEN_TTL`
        ago)."""
        if not self._open_allowed or self._keys_exist:
            return False
        now = self._clock.now()
        if self._open_checked is not None and _fresh(self._open_checked, now, OPEN_TTL):
            return True
        if await self._store.count_apps() > 0:
            self._keys_exist = True
            return False
        self._open_checked = now
        return True

    async def feed_ticket(self, owner: str, *, caller: Principal) -> tuple[str, datetime]:
        """A ticket that opens `owner`'s feed for a minute (see `tocsin.auth`), and its end;
        one made for a dev-mode caller ends with dev mode, as the caller's access does."""
        secret = self._secret or await self._signing_secret()
        return sign_feed_ticket(
            owner, now=self._clock.now(), secret=secret, dev_only=caller.dev_only
        )

    async def authenticate_ticket(self, ticket: str) -> Principal:
        """The owner a feed ticket stands for (as its owner token would), or a 401 problem."""
        secret = self._secret or await self._signing_secret()
        read = read_feed_ticket(ticket, secret=secret)
        if read is None or read.expires <= self._clock.now():
            raise unauthorized("the feed ticket is not valid or has expired: ask for a new one")
        if await self._falls_to_revocation(read):
            raise unauthorized("the feed ticket has been revoked: ask for a new one")
        return await self._dev_checked(read)

    async def still_admits(self, principal: Principal) -> bool:
        """Whether the credential `principal` came from would be admitted now, for a feed
        that stays open: not revoked since (an app's key, an owner's tokens), and a dev-mode
        caller only while the server runs open. Expiry is not judged: a feed opened in time
        stays open past its ticket's minute."""
        if principal.dev_only and not await self.is_open():
            return False
        if principal.key_hash is not None:
            try:
                return await self._app_principal(principal.key_hash) is not None
            except Problem:
                return False
        if principal.owner is None:
            return True
        line = await self._revoked_before(principal.owner)
        return not _before(principal.signed, line)

    def forget_owner(self, owner: str) -> None:
        """The store told of a revocation of `owner`'s tokens: ask it again next time."""
        self._revoked.pop(owner, None)
        self._revocations_heard += 1

    def forget_keys(self) -> None:
        """Drop every cached answer: the next request asks the store again."""
        self._apps.clear()
        self._revoked.clear()
        self._revocations_heard += 1
        self._open_checked = None

    async def _verify(self, token: str) -> Principal | None:
        if token.startswith(API_KEY_PREFIX):
            return await self._app_principal(hash_api_key(token))
        if token.startswith(OWNER_CREDENTIAL_PREFIX):
            secret = self._secret or await self._signing_secret()
            read = read_owner_token(token, secret=secret)
            return None if read is None else await self._owner_principal(read)
        return None

    async def _owner_principal(self, token: OwnerToken) -> Principal:
        """The owner a validly signed token names, or a 401 saying why it no longer works."""
        if token.expires <= self._clock.now():
            raise unauthorized("the owner token has expired: ask for a new one")
        if await self._falls_to_revocation(token):
            raise unauthorized("the owner token has been revoked: ask for a new one")
        return await self._dev_checked(token)

    async def _falls_to_revocation(self, credential: OwnerToken) -> bool:
        return _before(credential.signed, await self._revoked_before(credential.owner))

    async def _dev_checked(self, credential: OwnerToken) -> Principal:
        """The owner's principal, or a 401 for a dev-mode credential once dev mode is over."""
        if credential.dev_only and not await self.is_open():
            raise unauthorized(
                "the demo token (and a feed ticket made in dev mode) works only while the "
                "server runs on loopback without API keys: sign an owner token with "
                "`tocsin keys owner-token`"
            )
        owner = credential.owner
        return Principal(
            scope=f"owner:{owner}",
            owner=owner,
            signed=credential.signed,
            dev_only=credential.dev_only,
        )

    async def _revoked_before(self, owner: str) -> datetime | None:
        now = self._clock.now()
        cached = self._revoked.get(owner)
        if cached is not None and _fresh(cached[0], now, KEY_TTL):
            return cached[1]
        heard = self._revocations_heard
        line = await self._store.owner_tokens_revoked_before(owner)
        if heard != self._revocations_heard:
            return line  # a revocation was told of meanwhile: this answer may predate it
        if len(self._revoked) >= MAX_CACHED_KEYS:
            self._revoked.clear()  # only validly signed tokens get here, so this is a backstop
        self._revoked[owner] = (now, line)
        return line

    async def _app_principal(self, key_hash: str) -> Principal | None:
        """The app a key belongs to (None: no app has it), or a 401 if it is revoked."""
        now = self._clock.now()
        cached = self._apps.get(key_hash)
        if cached is not None and _fresh(cached[0], now, KEY_TTL):
            return _live(cached[1])
        app = await self._store.find_app(key_hash=key_hash)
        if app is None:
            self._apps.pop(key_hash, None)
            return None
        self._keys_exist = True
        principal = None
        if app.revoked_at is None:
            principal = Principal(
                scope=f"app:{app.name}",
                source=app.name,
                admin=app.admin,
                key_hash=key_hash,
                priority=app.priority,
            )
        if len(self._apps) >= MAX_CACHED_KEYS:
            self._apps.clear()  # only real keys get here, so this is a backstop
        self._apps[key_hash] = (now, principal)
        return _live(principal)

    async def _signing_secret(self) -> str:
        async with self._secret_lock:
            if self._secret is None:
                self._secret = await owner_token_secret(self._store, None)
            return self._secret


def _live(principal: Principal | None) -> Principal:
    """An app's principal; None stands for its key being revoked."""
    if principal is None:
        raise unauthorized("the API key has been revoked")
    return principal


def _fresh(checked: datetime, now: datetime, ttl: timedelta) -> bool:
    return timedelta(0) <= now - checked < ttl


def _before(signed: datetime | None, line: datetime | None) -> bool:
    """Whether a credential signed at `signed` falls to a revocation line (one that cannot
    say when it was signed falls to any)."""
    return line is not None and (signed is None or signed <= line)


def _bearer(authorization: str) -> str | None:
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def unauthorized(detail: str) -> Problem:
    return Problem(401, "unauthorized", detail, headers=_CHALLENGE)
