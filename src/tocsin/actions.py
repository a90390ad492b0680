"""Action links: Done and Snooze on one ring, for whoever holds the ring's notification.

A ring's email or push offers **Done** and **Snooze 10 min**. The person tapping one holds no
API key or owner token (a mail client, a lock screen), so the link carries its own
authority: a token naming the action, the ring (its firing id) and when the link ends,
with a MAC from the service's secret key ring (`TOCSIN_SECRET_KEY`, `tocsin.keyring`):

    done.06h2hgqf2y7g8415ze4g.1795980213.1796585013.3f9a0c12.<tag>
    action firing id (reminder . due)     expiry     key id   HMAC-SHA256, 16 bytes

The token can do that one thing to that one ring and nothing else: it reads nothing and
names no owner. A link lasts `LINK_LIFETIME` after its ring's due time, long enough for an
email read the next day or a notification left on a lock screen over a weekend; its expiry
is worked out from the ring, so every retry of a ring carries the same links. The tag is
HMAC-SHA256 cut to 128 bits (22 characters), far beyond guessing, so that a link stays short.
The key id picks the key at once; a key rotated out of the ring ends the links it signed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from tocsin.domain import Firing
from tocsin.errors import SecretKeyMissing
from tocsin.ids import is_id
from tocsin.keyring import Keyring

LINK_LIFETIME = timedelta(days=7)
SNOOZE = "10m"  # what a ring's Snooze asks for: ten minutes from now
PATH = "/v1/actions/"
_PURPOSE = b"tocsin ring action link v1"
_TAG_BYTES = 16
_MAX_TOKEN = 200  # an action, a firing id, an expiry, a key id and a tag: about 80


class Action(StrEnum):
    """What a link does to its ring."""

    DONE = "done"
    SNOOZE = "snooze"

    @property
    def words(self) -> str:
        """The button's words."""
        return "Done" if self is Action.DONE else "Snooze 10 min"


_ACTIONS = frozenset(action.value for action in Action)


@dataclass(frozen=True, kw_only=True, slots=True)
class SignedAction:
    """What a valid, unexpired link asks."""

    action: Action
    firing_id: str
    expires: datetime

    @property
    def reminder_id(self) -> str:
        return self.firing_id.rpartition(".")[0]

    @property
    def due(self) -> datetime:
        return datetime.fromtimestamp(int(self.firing_id.rpartition(".")[2]), UTC)


class LinkRefused(Exception):
    """Why a link does nothing: `status` and `slug` for the problem, `detail` in words."""

    def __init__(self, status: int, slug: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.detail = detail


def sign(keyring: Keyring, action: Action, firing_id: str, expires: datetime) -> str:
    """The token of a link that does `action` to the ring `firing_id` until `expires`."""
    kid, key = keyring.mac_key(_PURPOSE)
    signed = f"{action.value}.{firing_id}.{int(expires.timestamp())}"
    return f"{signed}.{kid}.{_tag(key, signed)}"


def read(keyring: Keyring, token: str, *, now: datetime) -> SignedAction:
    """What `token` asks, or `LinkRefused` saying what is wrong with it: not a link (400),
    a tag that does not match what it says, or made with a key this server no longer holds
    (403), or a link past its expiry (410)."""
    parts = token.split(".") if len(token) <= _MAX_TOKEN else []
    if len(parts) != 6:
        raise _malformed("it is not action.firing.expiry.key.tag")
    action, reminder_id, second, expiry, kid, tag = parts
    if action not in _ACTIONS:
        raise _malformed(f"no action {action!r} (done or snooze)")
    if not is_id(reminder_id) or not _seconds(second) or not _seconds(expiry):
        raise _malformed("it names no ring")
    try:
        key = keyring.mac_key_of(kid, _PURPOSE)
    except SecretKeyMissing:
        key = None
    if key is None:
        raise LinkRefused(
            403,
            "action-link-key-unknown",
            f"the link was signed with key {kid}, which this server no longer holds "
            "(its secret key was rotated since): mark the ring from the app or the page",
        )
    signed = f"{action}.{reminder_id}.{second}.{expiry}"
    if not hmac.compare_digest(tag, _tag(key, signed)):
        raise LinkRefused(
            403,
            "action-link-forged",
            "the link's signature does not match what it says: it was changed after it was "
            "sent (copy the whole link)",
        )
    expires = datetime.fromtimestamp(int(expiry), UTC)
    if expires <= now:
        raise LinkRefused(
            410,
            "action-link-expired",
            f"the link expired at {expires:%Y-%m-%dT%H:%M:%SZ} (a ring's links last "
            f"{LINK_LIFETIME.days} days): mark the ring from the app or the page",
        )
    return SignedAction(action=Action(action), firing_id=f"{reminder_id}.{second}", expires=expires)


@dataclass(frozen=True, kw_only=True, slots=True)
class RingLinks:
    """The Done and Snooze links of one ring, as absolute URLs."""

    done: str
    snooze: str

    def offered(self) -> list[dict[str, Any]]:
        """The actions as a notification lists them: `action` (its identifier), `title`,
        `url` (to POST)."""
        return [
            {"action": Action.DONE.value, "title": Action.DONE.words, "url": self.done},
            {"action": Action.SNOOZE.value, "title": Action.SNOOZE.words, "url": self.snooze},
        ]


class ActionLinks:
    """Makes each ring's links, at `base_url` (where people reach this service:
    `https://tocsin.example.com`), signed with the first key of `keyring`."""

    def __init__(self, base_url: str, keyring: Keyring) -> None:
        self._prefix = base_url.rstrip("/") + PATH
        self._keyring = keyring

    def of(self, firing: Firing) -> RingLinks:
        expires = firing.due_at + LINK_LIFETIME
        done = sign(self._keyring, Action.DONE, firing.id, expires)
        snooze = sign(self._keyring, Action.SNOOZE, firing.id, expires)
        return RingLinks(done=self._prefix + done, snooze=self._prefix + snooze)


def action_links(base_url: str | None, keyring: Keyring) -> ActionLinks | None:
    """The links rings carry, or None when they can carry none: no address people reach
    this service at (`TOCSIN_PUBLIC_URL`), or no key to sign with."""
    if base_url is None or not keyring.ids:
        return None
    return ActionLinks(base_url, keyring)


def _tag(key: bytes, signed: str) -> str:
    digest = hmac.new(key, signed.encode(), hashlib.sha256).digest()[:_TAG_BYTES]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _seconds(text: str) -> bool:
    # ASCII digits only ("²" is a digit to Python), and an instant a datetime can hold
    return text.isascii() and text.isdigit() and len(text) <= 11


def _malformed(why: str) -> LinkRefused:
    return LinkRefused(400, "not-an-action-link", f"not an action link of this server: {why}")
