"""Standard Webhooks signatures: `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`.

https://www.standardwebhooks.com — the secret is `whsec_` + base64 of the key bytes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"


def new_secret() -> str:
    """A fresh signing secret in the Standard Webhooks format."""
    return PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def secret_key(secret: str) -> bytes:
    """The key bytes of a `whsec_…` secret (base64 without the prefix)."""
    return base64.b64decode(secret.removeprefix(PREFIX))


def sign(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` header value for one message."""
    signed = b"%s.%d.%s" % (message_id.encode(), timestamp, body)
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def verify(key: bytes, message_id: str, timestamp: int, body: bytes, header: str) -> bool:
    """Whether any `v1` signature in the (space-separated) header matches."""
    expected = sign(key, message_id, timestamp, body)
    return any(hmac.compare_digest(expected, candidate) for candidate in header.split())
