"""Channels: one module per way a ring goes out, each a `DestinationSender`.

Each module owns its settings (`EmailSettings`…); `ChannelSettings` holds them all, and
`tocsin.settings.Settings` is made of it. `build_channels` makes the senders the settings
configure; a channel whose settings are missing has no sender, and a ring on it fails at
once saying which settings enable it (the API refuses such reminders before that: see
`configured_channels`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from tocsin.actions import ActionLinks
from tocsin.channels import apns, apprise, email, fcm, sms, webpush
from tocsin.channels.apns import ApnsSettings
from tocsin.channels.apprise import AppriseSettings
from tocsin.channels.base import DeliveryResult, Destination, DestinationSender
from tocsin.channels.email import EmailSettings
from tocsin.channels.fcm import FcmSettings
from tocsin.channels.inapp import Announce, InappSender
from tocsin.channels.log import LogSender
from tocsin.channels.null import NullSender
from tocsin.channels.sms import SmsSettings
from tocsin.channels.webhook import WebhookSender, WebhookSettings
from tocsin.channels.webpush import WebPushSettings
from tocsin.clock import Clock, SystemClock
from tocsin.domain import Channel

__all__ = [
    "CONTACT_MODULES",
    "ChannelSettings",
    "Channels",
    "DeliveryResult",
    "Destination",
    "DestinationSender",
    "build_channels",
    "configured_channels",
    "enabled_by",
]

logger = logging.getLogger(__name__)

# The channels that ring an owner's contacts, each a module with KIND, ENABLED_BY,
# validate_contact and build (see tocsin.channels.contacts).
CONTACT_MODULES = (apns, fcm, webpush, email, sms, apprise)

_ENABLED_BY: dict[Channel, str] = {module.KIND: module.ENABLED_BY for module in CONTACT_MODULES}


class ChannelSettings(
    AppriseSettings,
    WebPushSettings,
    FcmSettings,
    ApnsSettings,
    SmsSettings,
    EmailSettings,
    WebhookSettings,
):
    """Every channel's settings, on top of the core ones. Listed last first: pydantic orders
    the fields of the bases from the last to the first, and that order (the core ones, then
    webhook, email, sms, apns, fcm, webpush, apprise) is the one `tocsin config` prints and
    docs/operations.md shows."""


def enabled_by(channel: Channel) -> str:
    """The settings that enable `channel`, for an error that says how to turn it on."""
    return _ENABLED_BY.get(channel, "nothing: it is always on")


class Channels:
    """The sender of each configured channel. `null` marks the benchmark's channels, which
    send nothing anywhere: every firing has one destination, the counter."""

    def __init__(self, senders: Mapping[Channel, DestinationSender], *, null: bool = False) -> None:
        self._senders = dict(senders)
        self.null = null

    def sender(self, channel: Channel) -> DestinationSender | None:
        """The channel's sender, or None when this deployment has not configured it."""
        return self._senders.get(channel)

    @property
    def configured(self) -> frozenset[Channel]:
        return frozenset(self._senders)

    async def close(self) -> None:
        for sender in set(self._senders.values()):
            await sender.close()


def build_channels(
    settings: ChannelSettings,
    clock: Clock,
    *,
    null: bool = False,
    announce: Announce | None = None,
    links: ActionLinks | None = None,
) -> Channels:
    """The channels this deployment can use. With `null`, every channel only counts (for
    benchmarks of the engine without a peer). A channel whose settings are there only in part
    raises ValueError naming what is missing: better not to start than to fail every ring.
    `announce` (the store's `announce_feed`) is how in-app rings reach the API processes;
    the in-app channel is always there, but sends only with it. `links` makes the Done and
    Snooze links of each ring, for the channels that can carry them."""
    if null:
        return Channels(dict.fromkeys(Channel, NullSender()), null=True)
    senders: dict[Channel, DestinationSender] = {
        Channel.LOG: LogSender(clock),
        Channel.WEBHOOK: WebhookSender(
            timeout=settings.webhook_timeout_seconds,
            max_connections=settings.delivery_concurrency,
            allow_private=settings.allow_private_urls,
            clock=clock,
            links=links,
        ),
        Channel.INAPP: InappSender(announce),
    }
    for module in CONTACT_MODULES:
        sender = module.build(settings, clock, links)
        if sender is not None:
            senders[module.KIND] = sender
    logger.info("channels: %s", ", ".join(sorted(c.value for c in senders)))
    return Channels(senders)


def configured_channels(settings: ChannelSettings) -> frozenset[Channel]:
    """The channels `settings` configure. (Building a sender opens nothing: connections and
    threads are made at the first send.)"""
    return build_channels(settings, SystemClock()).configured
