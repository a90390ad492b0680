"""Credentials: API keys for apps, signed owner tokens for people, webhook signing secrets.

API keys are 32 random bytes, so a plain SHA-256 of the key is enough to store them: a slow
password hash (bcrypt, argon2) protects low-entropy secrets against guessing, and nobody can
guess 256 random bits, while a fast hash lets every request look its key up by an index.

Owner tokens are stateless: `to_<owner>.<signed>.<expiry>.<signature>`, the signature being
HMAC-SHA256 over the owner, when it was signed (milliseconds) and its expiry (seconds) with
the deployment's secret (`TOCSIN_SECRET`, or the one kept in the database so every process
shares it). Revoking an owner's tokens (`Store.revoke_owner_tokens`) refuses those signed up
to an instant, which is why a token says when it was signed; tokens from before that field
(`to_<owner>.<expiry>.<signature>`) still work until they expire or their owner's are revoked.

Feed tickets are the same shape (`tf_<owner>.<signed>.<expiry>.<signature>`), signed under
another label so that neither passes for the other: a page's `EventSource` cannot send an
`Authorization` header, so it puts a ticket in the feed's URL instead. A URL may be logged
by a proxy or kept in a browser's history, so a ticket opens one owner's feed only, and only
for `FEED_TICKET_SECONDS`; a revocation of its owner's tokens after it was signed refuses it
too. Tickets from before that field (`tf_<owner>.<expiry>.<signature>`) are read as the old
tokens are: good until they expire, unless any revocation of their owner's tokens exists.

The demo token `tocsin serve` prints, and the tickets made in loopback dev mode, are signed
under labels of their own (`OwnerToken.dev_only`): the server admits them only while it still
runs without API keys, so they end when it leaves dev mode.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from tocsin.domain import App, Priority
from tocsin.store.ports import AppStore

API_KEY_PREFIX = "tk_"
OWNER_CREDENTIAL_PREFIX = "to_"
FEED_TICKET_PREFIX = "tf_"
FEED_TICKET_SECONDS = 60  # long enough to open the feed; a page asks anew to reconnect
WEBHOOK_SIGNING_PREFIX = "whsec_"
SIGNING_KEY_NAME = "owner-token"  # the name `Store.ensure_secret` keeps it under
APP_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_SIGNED_V1 = b"tocsin-owner-token-v1"
_SIGNED = b"tocsin-owner-token-v2"
_SIGNED_DEMO = b"tocsin-demo-token-v1"
_SIGNED_TICKET_V1 = b"tocsin-feed-ticket-v1"
_SIGNED_TICKET = b"tocsin-feed-ticket-v2"
_SIGNED_DEMO_TICKET = b"tocsin-demo-feed-ticket-v1"
# The labels each credential may be signed under, by its count of fields.
_TOKEN_LABELS = {2: (_SIGNED, _SIGNED_DEMO), 1: (_SIGNED_V1,)}
_TICKET_LABELS = {2: (_SIGNED_TICKET, _SIGNED_DEMO_TICKET), 1: (_SIGNED_TICKET_V1,)}
_DEV_ONLY = frozenset({_SIGNED_DEMO, _SIGNED_DEMO_TICKET})


@dataclass(frozen=True, kw_only=True, slots=True)
class OwnerToken:
    """What an owner token (or a feed ticket: the same fields) with a valid signature says."""

    owner: str
    signed: datetime | None  # None: a credential from before they said when they were signed
    expires: datetime
    dev_only: bool = False  # good only while the server runs in loopback dev mode


def new_api_key() -> str:
    """A fresh API key: `tk_` and 32 random bytes, URL-safe."""
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> str:
    """The hex SHA-256 of a key: what is stored and looked up (see the module docstring)."""
    return hashlib.sha256(key.encode()).hexdigest()


def new_webhook_secret() -> str:
    """A Standard Webhooks signing secret: `whsec_` and base64 of 32 random bytes."""
    return WEBHOOK_SIGNING_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def new_signing_secret() -> str:
    """A fresh deployment secret for owner tokens."""
    return secrets.token_urlsafe(32)


def new_app(
    name: str,
    *,
    webhook_url: str | None,
    now: datetime,
    admin: bool = False,
    priority: Priority = Priority.URGENT,
) -> tuple[App, str]:
    """A new app and its key in clear text (shown once, never stored); an `admin` key sees
    every app's reminders; the reminders it saves without a priority have `priority`."""
    if not APP_NAME.fullmatch(name):
        raise ValueError("an app name is 1-64 characters of letters, digits, '.', '_' or '-'")
    key = new_api_key()
    app = App(
        name=name,
        key_hash=hash_api_key(key),
        key_prefix=key[:11],
        created_at=now,
        webhook_url=webhook_url,
        webhook_secret=new_webhook_secret() if webhook_url else None,
        admin=admin,
        priority=priority,
    )
    return app, key


async def owner_token_secret(store: AppStore, configured: str | None) -> str:
    """The secret owner tokens are signed with: the configured one, else the database's."""
    if configured:
        return configured
    return await store.ensure_secret(SIGNING_KEY_NAME, new_signing_secret())


def sign_owner_token(
    owner: str,
    *,
    expires: datetime,
    secret: str,
    signed: datetime | None = None,
    dev_only: bool = False,
) -> str:
    """A token that lets its bearer see and change `owner`'s reminders until `expires`
    (unless its owner's tokens are revoked after `signed`, default now); a `dev_only` one
    (the demo token) only while the server runs in loopback dev mode."""
    at = str(int((signed or datetime.now(UTC)).timestamp() * 1000))
    expiry = str(int(expires.timestamp()))
    label = _SIGNED_DEMO if dev_only else _SIGNED
    return _sign(OWNER_CREDENTIAL_PREFIX, label, secret, owner, at, expiry)


def read_owner_token(token: str, *, secret: str) -> OwnerToken | None:
    """What a token says, if its signature is valid (expired or not), else None."""
    return _credential(_read(OWNER_CREDENTIAL_PREFIX, _TOKEN_LABELS, token, secret=secret))


def verify_owner_token(token: str, *, secret: str, now: datetime) -> str | None:
    """The owner a valid, unexpired token names, or None (revocation and dev mode are the
    caller's)."""
    read = read_owner_token(token, secret=secret)
    if read is None or read.expires <= now:
        return None
    return read.owner


def sign_feed_ticket(
    owner: str, *, now: datetime, secret: str, dev_only: bool = False
) -> tuple[str, datetime]:
    """A ticket, signed at `now`, that opens `owner`'s feed for `FEED_TICKET_SECONDS`, and
    when it ends; a `dev_only` one only while the server runs in loopback dev mode."""
    expires = now + timedelta(seconds=FEED_TICKET_SECONDS)
    at = str(int(now.timestamp() * 1000))
    expiry = str(int(expires.timestamp()))
    label = _SIGNED_DEMO_TICKET if dev_only else _SIGNED_TICKET
    return _sign(FEED_TICKET_PREFIX, label, secret, owner, at, expiry), expires


def read_feed_ticket(ticket: str, *, secret: str) -> OwnerToken | None:
    """What a ticket says, if its signature is valid (expired or not), else None."""
    return _credential(_read(FEED_TICKET_PREFIX, _TICKET_LABELS, ticket, secret=secret))


# Pure, and asked on every request without an API key with the request's `Host` (parsing an
# address costs ~9 µs, 3 % of a create); a bounded cache, as a `Host` is the client's choice.
@lru_cache(maxsize=256)
def is_loopback(host: str) -> bool:
    """Whether binding to `host` keeps the server reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _sign(prefix: str, label: bytes, secret: str, owner: str, *fields: str) -> str:
    signature = _signature(secret, label, owner, *fields)
    return ".".join((f"{prefix}{_b64(owner.encode())}", *fields, signature))


def _read(
    prefix: str, labels: Mapping[int, Sequence[bytes]], token: str, *, secret: str
) -> tuple[str, list[str], bytes] | None:
    """The owner, the numeric fields and the label of a credential whose signature is valid,
    else None; `labels` maps each accepted count of fields to the labels it may be signed
    under."""
    if not token.startswith(prefix):
        return None
    parts = token[len(prefix) :].split(".")
    candidates = labels.get(len(parts) - 2, ())
    if not candidates or not all(field.isdigit() for field in parts[1:-1]):
        return None
    encoded, *fields, signature = parts
    try:
        owner = _unb64(encoded).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    for label in candidates:
        if hmac.compare_digest(signature, _signature(secret, label, owner, *fields)):
            return owner, fields, label
    return None


def _credential(read: tuple[str, list[str], bytes] | None) -> OwnerToken | None:
    """What `_read` found, as times: (signed,) expiry."""
    if read is None:
        return None
    owner, fields, label = read
    try:
        signed = datetime.fromtimestamp(int(fields[0]) / 1000, UTC) if len(fields) == 2 else None
        expires = datetime.fromtimestamp(int(fields[-1]), UTC)
    except (OverflowError, OSError, ValueError):  # signed, but not a time we can hold
        return None
    return OwnerToken(owner=owner, signed=signed, expires=expires, dev_only=label in _DEV_ONLY)


def _signature(secret: str, label: bytes, owner: str, *fields: str) -> str:
    message = b"\n".join((label, owner.encode(), *(field.encode() for field in fields)))
    return _b64(hmac.new(secret.encode(), message, hashlib.sha256).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
