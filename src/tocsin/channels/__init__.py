"""Channels: one module per way a ring goes out, each behind the `Sender` interface."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tocsin.channels.base import NOT_CONFIGURED, DeliveryResult, NoTarget, Sender, Unconfigured
from tocsin.channels.log import LogSender
from tocsin.channels.null import NullSender
from tocsin.channels.webhook import WebhookSender
from tocsin.clock import Clock
from tocsin.domain import Channel
from tocsin.settings import Settings
from tocsin.store.base import Store

__all__ = [
    "NOT_CONFIGURED",
    "Channels",
    "DeliveryResult",
    "NoTarget",
    "Sender",
    "build_channels",
]


class Channels:
    """The sender for each channel; channels not set up fail at once ("channel not
    configured")."""

    def __init__(self, senders: Mapping[Channel, Sender[Any]]) -> None:
        unconfigured = Unconfigured()
        self._senders: dict[Channel, Sender[Any]] = {c: unconfigured for c in Channel}
        self._senders.update(senders)

    def __getitem__(self, channel: Channel) -> Sender[Any]:
        return self._senders[channel]

    async def close(self) -> None:
        for sender in set(self._senders.values()):
            await sender.close()


def build_channels(
    settings: Settings, store: Store, clock: Clock, *, null: bool = False
) -> Channels:
    """The channels this deployment can use. With `null`, every channel only counts (for
    benchmarks of the engine without a peer)."""
    if null:
        counter = NullSender()
        return Channels(dict.fromkeys(Channel, counter))
    webhook = WebhookSender(
        store,
        default_url=settings.webhook_url,
        default_secret=settings.webhook_secret,
        timeout=settings.webhook_timeout_seconds,
        max_connections=settings.delivery_concurrency,
        allow_private=settings.allow_private_urls,
    )
    return Channels({Channel.LOG: LogSender(clock), Channel.WEBHOOK: webhook})
