"""The quiet hours operations: the spans of an owner's day in which his bulk rings wait.
Checks and decisions here, storage in the store, the holding itself in delivery
(`Deliverer`)."""

from __future__ import annotations

from datetime import time

from tocsin.api.models import QuietHoursIn
from tocsin.api.owned import may_manage, saver
from tocsin.api.problems import FieldError, Problem, invalid
from tocsin.api.security import Principal
from tocsin.clock import Clock
from tocsin.errors import InvalidInput
from tocsin.store.ports import QuietHoursStore
from tocsin.time.quiet import QuietHours, parse_clock
from tocsin.time.zones import load_zone

SAME_START_AND_END = "must differ from start: quiet hours are part of a day"


class QuietHoursService:
    """Read, set and clear an owner's quiet hours. Each saver keeps its own: an app key sets
    the quiet hours of its own reminders' rings for the owner and sees only those; an owner
    token sets the owner's own, which hold every ring of his, and sees every saver's; an
    admin key sets the owner's own and sees all."""

    def __init__(self, store: QuietHoursStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    async def list(self, principal: Principal, owner: str) -> list[QuietHours]:
        may_manage(principal, owner)
        spans = await self.store.list_quiet_hours(owner)
        return [span for span in spans if principal.tenant in (None, span.source)]

    async def set(self, principal: Principal, owner: str, item: QuietHoursIn) -> QuietHours:
        """Save the caller's quiet hours for `owner`, replacing its own; a 422 naming each
        field that is wrong."""
        may_manage(principal, owner)
        errors: list[FieldError] = []
        start = _clock("start", item.start, errors)
        end = _clock("end", item.end, errors)
        if start is not None and start == end:
            errors.append(FieldError("end", SAME_START_AND_END))
        try:
            load_zone(item.zone)
        except InvalidInput as error:  # names a close zone when there is one
            errors.append(FieldError("zone", error.message))
        if errors or start is None or end is None:
            raise invalid(errors)
        quiet = QuietHours(
            owner=owner,
            source=saver(principal),
            start=start,
            end=end,
            zone=item.zone,
            updated_at=self.clock.now(),
        )
        await self.store.save_quiet_hours(quiet)
        return quiet

    async def clear(self, principal: Principal, owner: str) -> None:
        may_manage(principal, owner)
        if not await self.store.delete_quiet_hours(owner, saver(principal)):
            raise Problem(404, "not-found", f"no quiet hours of {owner} saved with this token")


def _clock(name: str, text: str, errors: list[FieldError]) -> time | None:
    try:
        return parse_clock(text)
    except ValueError as error:
        errors.append(FieldError(name, str(error)))
        return None
