"""The quiet hours' port: spans of an owner's day in which bulk rings wait."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from tocsin.time.quiet import QuietHours


class QuietHoursStore(Protocol):
    """Owners' quiet hours, one for each saver (the owner himself, or an app): saved through
    the API, read by owner when a bulk ring is about to be sent."""

    @abstractmethod
    async def save_quiet_hours(self, quiet: QuietHours) -> None:
        """Save the saver's quiet hours for the owner, replacing any it saved before."""

    @abstractmethod
    async def list_quiet_hours(self, owner: str) -> list[QuietHours]:
        """Every saver's quiet hours for `owner`, the owner's own first, then by app."""

    @abstractmethod
    async def delete_quiet_hours(self, owner: str, source: str | None) -> bool:
        """Delete the quiet hours `source` (None: the owner) saved; False when it had none."""

    @abstractmethod
    async def quiet_hours_of(self, owners: Sequence[str]) -> dict[str, list[QuietHours]]:
        """The quiet hours of many owners at once (those with none are left out)."""

    @abstractmethod
    async def ignoring_quiet_hours(self, reminder_ids: Sequence[str]) -> set[str]:
        """Those of the reminders whose rings go through quiet hours (`ignore_quiet_hours`)."""
