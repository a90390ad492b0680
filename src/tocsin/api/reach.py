"""Which channels can deliver a ring for an owner now, and why not: what a create's
`warnings` say and what `GET /v1/owners/{owner}/channels` shows, so that a page offers only
what can ring.

It follows delivery's own rules (`tocsin.delivery.destinations`) without its caches: `log`
and `inapp` always have a destination; `webhook` has the app's endpoint (unless it answered
410 Gone), else the deployment's `TOCSIN_WEBHOOK_URL`, and the owner's webhook contacts;
every other channel the owner's enabled contacts of its kind that the app may ring. A channel
this server has not configured can deliver nothing (a create on it is refused outright).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from tocsin.channels import enabled_by
from tocsin.domain import App, Channel, Contact
from tocsin.store.ports import AppStore, ContactStore

# Whose ring, from which app (None: the owner's own), on which channel.
Ask = tuple[str, str | None, Channel]
ALWAYS = frozenset({Channel.LOG, Channel.INAPP})  # a ring there never lacks a destination


class ReachStore(ContactStore, AppStore, Protocol):
    """The owners' contacts and the apps' webhook endpoints."""


class Reach:
    """Says, for (owner, app, channel) triples, what keeps a ring from going anywhere."""

    def __init__(
        self, store: ReachStore, *, configured: frozenset[Channel], default_webhook: bool
    ) -> None:
        self._store = store
        self._configured = configured
        self._default_webhook = default_webhook

    async def why_not(self, asks: Iterable[Ask]) -> dict[Ask, str]:
        """Each triple that cannot deliver now, with the reason; one contact query for all,
        and one app lookup per app with a webhook asked about."""
        wanted = set(asks)
        blocked = {
            ask: self._unconfigured(ask[2]) for ask in wanted if ask[2] not in self._configured
        }
        looked = sorted({(owner, c) for owner, _, c in wanted - blocked.keys() if c not in ALWAYS})
        if not looked:
            return blocked
        found = await self._store.destinations(looked)
        apps = await self._apps({s for _, s, c in wanted if c is Channel.WEBHOOK and s})
        for ask in wanted - blocked.keys():
            owner, source, channel = ask
            if channel in ALWAYS or _usable(found.get((owner, channel), []), source):
                continue
            if channel is Channel.WEBHOOK:
                why = self._webhook(owner, apps.get(source) if source else None)
            else:
                why = _no_contact(owner, channel)
            if why is not None:
                blocked[ask] = why
        return blocked

    async def _apps(self, names: set[str]) -> dict[str, App]:
        found = {}
        for name in sorted(names):
            app = await self._store.find_app(name=name)
            if app is not None:
                found[name] = app
        return found

    def _webhook(self, owner: str, app: App | None) -> str | None:
        """Why a webhook ring of `app` (None: the owner's own, or an unknown app) has no
        endpoint, or None when it has one."""
        if app is not None and app.webhook_url:
            if not app.webhook_disabled:
                return None
            return (
                f"app {app.name}'s webhook was disabled (it answered 410 Gone) and {owner} "
                "has no webhook contact: the ring would find no-destination"
            )
        if self._default_webhook:
            return None
        whose = f"app {app.name} has" if app is not None else "there is"
        return (
            f"{whose} no webhook URL (`tocsin keys create --webhook-url`, or TOCSIN_WEBHOOK_URL "
            f"for the server) and {owner} has no webhook contact: the ring would find "
            "no-destination"
        )

    @staticmethod
    def _unconfigured(channel: Channel) -> str:
        needs = enabled_by(channel)
        return f"the {channel} channel is not configured on this server (it needs {needs})"


def _usable(contacts: Sequence[Contact], source: str | None) -> bool:
    return any(contact.takes_rings_of(source) for contact in contacts)


def _no_contact(owner: str, channel: Channel) -> str:
    return (
        f"{owner} has no {channel} contact yet: add one "
        f"(POST /v1/owners/{owner}/contacts) before it rings, or the ring "
        "finds no-destination there"
    )
