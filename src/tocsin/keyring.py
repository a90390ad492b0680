"""The secret key ring: seals the secrets Tocsin keeps in its database, and opens them.

Webhook signing secrets (an app's, a webhook contact's) and the owner-token signing secret
must be read back in clear to be used, so they cannot be hashed like API keys; they are
encrypted instead, with keys the database never sees (`TOCSIN_SECRET_KEY`).

A sealed value is one line of text, `v1:<key id>:<nonce>:<ciphertext>`: AES-256-GCM with a
random 96-bit nonce, the ciphertext carrying GCM's 16-byte tag, both URL-safe base64. The key
id (8 hex digits derived from the key) lets a reader pick its key at once and lets rotation
skip values already sealed with the first key without opening them; the `v1:<key id>` header
is authenticated too. AES-GCM rather than Fernet because Fernet tokens name no key: a ring of
several keys must try each, and cannot tell "sealed with an older key" without trying.

A ring holds one or more keys: the first seals, every one opens. A stored value without the
`v1:` prefix is a secret written before encryption (`whsec_…`, or URL-safe base64 for the
owner-token secret: neither has a colon) and is handed back as it is until
`tocsin keys rotate-secrets` seals it.

The ring also signs what Tocsin hands out and reads back later (the Done and Snooze links of
a ring, `tocsin.actions`): each key gives a MAC key of its own for each purpose, derived
with HKDF-SHA256 under the purpose's label, so that an AES key is never used as an HMAC key
and one purpose's tags never pass for another's. The first key signs and every one checks,
as with sealing, so a rotation leaves the links already sent working while the older key
stays on the ring.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from tocsin.errors import SecretKeyError, SecretKeyMissing, SecretUnreadable

SETTING = "TOCSIN_SECRET_KEY"
KEY_BYTES = 32  # AES-256
_NONCE_BYTES = 12  # GCM's standard nonce; random is safe far beyond the secrets one database holds
_VERSION = "v1"
_PREFIX = _VERSION + ":"
_KEY_ID_CONTEXT = b"tocsin secret key id\0"
MISSING = (
    f"{SETTING} is not set: this process reads or writes secrets that Tocsin keeps encrypted "
    "with it; make one with `tocsin keys secret-key` and give every process of this database "
    "the same value"
)


def new_key() -> str:
    """A fresh key as `TOCSIN_SECRET_KEY` takes it: 32 random bytes, URL-safe base64."""
    return _b64(secrets.token_bytes(KEY_BYTES))


def key_id(key: bytes) -> str:
    """A key's public name: 8 hex digits of a hash of it (a 32-bit hint, not a secret)."""
    return hashlib.sha256(_KEY_ID_CONTEXT + key).hexdigest()[:8]


def is_sealed(stored: str) -> bool:
    """Whether a stored value is sealed (else it is plain text from before encryption)."""
    return stored.startswith(_PREFIX)


@dataclass(frozen=True, slots=True)
class _Key:
    id: str
    cipher: AESGCM
    secret: bytes


class Keyring:
    """Keys to seal and open stored secrets: the first seals, all open. A ring without keys
    (`Keyring.locked()`) opens only plain text and refuses everything else with
    `SecretKeyMissing`."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        ring = [_Key(key_id(key), AESGCM(key), key) for key in keys]
        if len({key.id for key in ring}) != len(ring):
            raise SecretKeyError(f"{SETTING} lists the same key twice")
        self._keys = ring
        self._by_id = {key.id: key for key in ring}
        self._macs: dict[tuple[str, bytes], bytes] = {}

    @classmethod
    def locked(cls) -> Keyring:
        return cls(())

    @classmethod
    def parse(cls, text: str, *, source: str = SETTING) -> Keyring:
        """The ring `text` names: keys as `tocsin keys secret-key` prints them, separated by
        commas (or white space), the sealing key first. `source` is named in errors; the
        text itself never is."""
        entries = text.replace(",", " ").split()
        if not entries:
            raise SecretKeyMissing(MISSING)
        return cls([_decode_key(entry, number, source) for number, entry in enumerate(entries, 1)])

    @property
    def ids(self) -> tuple[str, ...]:
        """The keys' ids, the sealing key's first."""
        return tuple(key.id for key in self._keys)

    def seal(self, secret: str) -> str:
        """`secret` sealed with the first key."""
        first = self._first()
        nonce = secrets.token_bytes(_NONCE_BYTES)
        header = f"{_VERSION}:{first.id}"
        sealed = first.cipher.encrypt(nonce, secret.encode(), header.encode())
        return f"{header}:{_b64(nonce)}:{_b64(sealed)}"

    def open(self, stored: str) -> str:
        """The secret a stored value holds; plain text (from before encryption) as it is."""
        if not is_sealed(stored):
            return stored
        parts = stored.split(":")
        if len(parts) != 4:
            raise SecretUnreadable("a stored secret is not a sealed value (v1:key:nonce:data)")
        version, kid, nonce, sealed = parts
        key = self._key(kid)
        try:
            clear = key.cipher.decrypt(_unb64(nonce), _unb64(sealed), f"{version}:{kid}".encode())
        except (InvalidTag, ValueError, binascii.Error) as error:
            raise SecretUnreadable(
                f"a stored secret sealed with key {kid} fails its integrity check: it was "
                "changed in the database, or sealed with another key"
            ) from error
        return clear.decode()

    def is_current(self, stored: str) -> bool:
        """Whether a stored value is sealed with the first key already."""
        return stored.startswith(f"{_PREFIX}{self._first().id}:")

    def reseal(self, stored: str) -> str | None:
        """`stored` sealed with the first key, or None when it is already."""
        if self.is_current(stored):
            return None
        return self.seal(self.open(stored))

    def mac_key(self, purpose: bytes) -> tuple[str, bytes]:
        """The id of the first key and the MAC key it gives for `purpose`: what signs."""
        first = self._first()
        return first.id, self._derived(first, purpose)

    def mac_key_of(self, kid: str, purpose: bytes) -> bytes | None:
        """The MAC key for `purpose` of the key `kid`, or None when the ring does not hold
        it (a tag made with a key since dropped)."""
        key = self._by_id.get(kid)
        return None if key is None else self._derived(key, purpose)

    def _derived(self, key: _Key, purpose: bytes) -> bytes:
        derived = self._macs.get((key.id, purpose))
        if derived is None:  # HKDF costs a few µs: once per key and purpose
            hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose)
            derived = self._macs[(key.id, purpose)] = hkdf.derive(key.secret)
        return derived

    def _first(self) -> _Key:
        if not self._keys:
            raise SecretKeyMissing(MISSING)
        return self._keys[0]

    def _key(self, kid: str) -> _Key:
        if not self._keys:
            raise SecretKeyMissing(MISSING)
        key = self._by_id.get(kid)
        if key is None:
            raise SecretUnreadable(
                f"a stored secret is sealed with key {kid}, which {SETTING} does not hold "
                f"(it holds {', '.join(self.ids)}): add that key after the first"
            )
        return key


def _decode_key(entry: str, number: int, source: str) -> bytes:
    try:
        key = _unb64(entry)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise SecretKeyError(
            f"{source}: key {number} is not {KEY_BYTES} bytes of URL-safe base64; "
            "make one with `tocsin keys secret-key`"
        )
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    # validate: anything outside the alphabet is an error, not silently skipped
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
