"""Who is calling: an app (API key), a person (owner token) or, in loopback mode, anyone."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from tocsin.api.problems import Problem
from tocsin.auth import (
    API_KEY_PREFIX,
    OWNER_CREDENTIAL_PREFIX,
    hash_api_key,
    owner_token_secret,
    verify_owner_token,
)
from tocsin.clock import Clock
from tocsin.store import Store

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="tocsin"'}


@dataclass(frozen=True, kw_only=True, slots=True)
class Principal:
    """The caller. `owner` is set for an owner token: the only owner it may see or change."""

    scope: str  # keeps idempotency keys of different callers apart
    source: str | None = None  # the app's name, recorded on the reminders it saves
    owner: str | None = None

    def may_see(self, owner: str) -> bool:
        return self.owner is None or self.owner == owner


ANONYMOUS = Principal(scope="anonymous")


class Authenticator:
    """Turns an `Authorization` header into a `Principal`, or a 401 problem.

    `open_allowed` says the server listens on loopback only: then, as long as no API key
    exists, requests without a key are accepted. Keys are never deleted, so once one is seen
    that is remembered and the store is not asked again.
    """

    def __init__(self, store: Store, clock: Clock, *, secret: str | None, open_allowed: bool):
        self._store = store
        self._clock = clock
        self._secret = secret
        self._open_allowed = open_allowed
        self._keys_exist = False
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
        """Whether requests without a key are accepted right now."""
        if not self._open_allowed or self._keys_exist:
            return False
        if await self._store.count_apps() > 0:
            self._keys_exist = True
            return False
        return True

    async def _verify(self, token: str) -> Principal | None:
        if token.startswith(API_KEY_PREFIX):
            app = await self._store.find_app(key_hash=hash_api_key(token))
            if app is None:
                return None
            return Principal(scope=f"app:{app.name}", source=app.name)
        if token.startswith(OWNER_CREDENTIAL_PREFIX):
            secret = await self._signing_secret()
            owner = verify_owner_token(token, secret=secret, now=self._clock.now())
            return Principal(scope=f"owner:{owner}", owner=owner) if owner else None
        return None

    async def _signing_secret(self) -> str:
        async with self._secret_lock:
            if self._secret is None:
                self._secret = await owner_token_secret(self._store, None)
            return self._secret


def _bearer(authorization: str) -> str | None:
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def unauthorized(detail: str) -> Problem:
    return Problem(401, "unauthorized", detail, headers=_CHALLENGE)
