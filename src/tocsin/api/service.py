"""What each reminder request does, between the routes (HTTP) and the store (rows).

Every change is a conditional write: a create saves all or nothing, an edit or a snooze of a
pending one-off applies only on the version it was decided on, a cancel only while pending.
When a conditional write loses, the row is read again to say why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

import orjson
from pydantic import ValidationError

from tocsin.actions import SNOOZE, Action, SignedAction
from tocsin.api import changes, render, saying
from tocsin.api.caps import ReminderCap
from tocsin.api.expansion import (
    BATCH_SECONDS,
    REQUEST_SECONDS,
    in_pool,
    not_checked,
    off_loop,
    too_costly,
)
from tocsin.api.idempotency import Answer, IdempotencyKey, find_answer, save_once
from tocsin.api.lists import ListService
from tocsin.api.models import OccurrencesIn, ReminderIn, ReminderPatch, SnoozeIn
from tocsin.api.owned import owner_for, visible
from tocsin.api.problems import FieldError, Problem, field_errors, invalid
from tocsin.api.reach import Reach
from tocsin.api.routing import check_configured, fields_of
from tocsin.api.security import LINK_HOLDER, Principal
from tocsin.clock import Clock
from tocsin.domain import (
    LIST_OWNER,
    Channel,
    Firing,
    FiringState,
    PlaceTrigger,
    Reminder,
    ReminderStatus,
    Route,
    Schedule,
    SharedList,
    list_of,
)
from tocsin.errors import CapReached, ExpansionBudgetExceeded, InvalidInput, ListGone
from tocsin.ids import is_id
from tocsin.store.ports import (
    AppStore,
    ContactStore,
    ListStore,
    PlaceRingStore,
    PlaceStore,
    ReminderStore,
)
from tocsin.store.ports.reminders import KEEP, Keep
from tocsin.time import Occurrence, occurrences
from tocsin.time.budget import check_budget, expansion_budget
from tocsin.time.sentence import Sentence

_RINGING = (FiringState.QUEUED, FiringState.SENDING)
_RETRIES = 3


class RemindersAndContacts(
    ReminderStore, ContactStore, AppStore, ListStore, PlaceStore, PlaceRingStore, Protocol
):
    """The reminders, the owners' contacts and apps' endpoints `Reach` looks up, the shared
    lists a list's reminder belongs to, and the places and triggers of the reminders that
    ring at a place."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Batch:
    """What each item of one batch is checked against: who saves it, when, and each list its
    items name as the caller finds it (the list, or why he may not save in it)."""

    principal: Principal
    now: datetime
    lists: Mapping[str, SharedList | Problem]


class ReminderService:
    """The reminders API's use cases, for one store and clock. `configured` are the channels
    this deployment can ring (a reminder on another is refused: it could only fail);
    `default_webhook`: a deployment-wide webhook URL is set (TOCSIN_WEBHOOK_URL);
    `max_pending` caps the pending reminders of one (owner, app) pair (`caps`; 0: no cap)."""

    def __init__(
        self,
        store: RemindersAndContacts,
        clock: Clock,
        *,
        configured: frozenset[Channel] = frozenset(Channel),
        default_webhook: bool = False,
        max_pending: int = 0,
    ) -> None:
        self.store = store
        self.clock = clock
        self.configured = configured
        self.reach = Reach(store, configured=configured, default_webhook=default_webhook)
        self.cap = ReminderCap(store, max_pending)
        self.lists = ListService(store, clock)

    def check_configured(self, route: Route | None) -> None:
        """422 naming each channel of `route` not configured here, and how to enable it
        (a ring on it could only fail)."""
        if route is not None:
            check_configured(route, self.configured)

    async def warnings(self, reminders: Sequence[Reminder]) -> dict[str, list[dict[str, str]]]:
        """By reminder id, what the caller should know: each channel of a reminder that
        cannot deliver its ring now (`Reach.why_not`: no contact of that kind the app may
        ring, no webhook URL, no longer configured). It is saved all the same: a contact
        added before it rings is used. One contact query for all."""
        # A list's ring goes to its members' contacts, decided when it is sent: not judged here.
        reminders = [r for r in reminders if list_of(r.owner) is None]
        asks = {(r.owner, r.source, c) for r in reminders for c in r.channel.channels}
        blocked = await self.reach.why_not(asks)
        warned: dict[str, list[dict[str, str]]] = {}
        for r in reminders:
            for field, channel in fields_of(r.channel):
                why = blocked.get((r.owner, r.source, channel))
                if why is not None:
                    warned.setdefault(r.id, []).append({"field": field, "message": why})
        return warned

    async def channels_for(self, principal: Principal, owner: str) -> list[dict[str, Any]]:
        """Every channel, in a fixed order, with whether a reminder this caller saves for
        `owner` on it would reach somewhere now, and why not."""
        if not principal.may_see(owner):
            raise Problem(404, "not-found", f"no owner {owner}")
        source = principal.source
        blocked = await self.reach.why_not((owner, source, channel) for channel in Channel)
        return [
            {
                "channel": channel.value,
                "configured": channel in self.configured,
                "ready": (owner, source, channel) not in blocked,
                "reason": blocked.get((owner, source, channel)),
            }
            for channel in Channel
        ]

    async def shown(self, reminder: Reminder) -> dict[str, Any]:
        """The reminder as an answer to its create or edit shows it: with its `warnings`."""
        body = render.reminder(reminder, await self.assignees([reminder]))
        return body | await self.warnings_of(reminder)

    async def warnings_of(self, reminder: Reminder) -> dict[str, Any]:
        """`{"warnings": …}` when the reminder has any, else nothing."""
        warned = await self.warnings([reminder])
        return {"warnings": warned[reminder.id]} if warned else {}

    async def assignees(self, reminders: Sequence[Reminder]) -> dict[str, str]:
        """The assignees of those of `reminders` that are a list's (no query when none is)."""
        listed = [r.id for r in reminders if list_of(r.owner) is not None]
        return await self.store.assignees_of(listed) if listed else {}

    # -- create ------------------------------------------------------------------------------

    async def create(
        self, principal: Principal, item: ReminderIn, key: IdempotencyKey | None
    ) -> Answer:
        earlier = await find_answer(self.store, key)
        if earlier is not None:
            return earlier
        now = self.clock.now()
        owner = await self._owner_of(principal, item)
        self.check_configured(item.route)
        made = await off_loop(
            lambda: self._new(principal, item, owner, now, keyed=key is not None),
            field="say" if item.say is not None else "repeat" if item.when is None else "when",
        )
        if made.on is not None:
            await self.check_place(principal, made.owner, made.on, field="on.place")
        assignees = {made.id: item.assignee} if item.assignee is not None else None
        body = render.reminder(made, assignees) | await self.warnings_of(made)
        answer = Answer(201, orjson.dumps(body))
        try:
            return await save_once(
                self.store,
                [made],
                answer,
                key=key,
                now=now,
                cap=self.cap.most,
                assignees=assignees,
            )
        except CapReached as reached:
            raise self.cap.problem(reached.owner, reached.source) from None
        except ListGone as gone:
            raise invalid([FieldError("list", f"no list {gone.list_id}: it was deleted")]) from None

    async def create_batch(
        self, principal: Principal, items: Sequence[Any], key: IdempotencyKey | None
    ) -> Answer:
        earlier = await find_answer(self.store, key)
        if earlier is not None:
            return earlier
        now = self.clock.now()
        batch = _Batch(
            principal=principal, now=now, lists=await self._batch_lists(principal, items)
        )
        # Every item's checks run off the loop, in one hop, within one budget for the batch.
        results, made, assignees = await in_pool(
            lambda: self._batch_items(batch, items),
            field="items",
            seconds=BATCH_SECONDS,
            what="checking the batch's schedules",
        )
        over = await self.cap.over(made) | await self._misplaced(principal, made, results)
        warned = await self.warnings(made)
        if warned:
            for result in results:
                if result.get("id") in warned:
                    result["warnings"] = warned[result["id"]]
        while True:
            if over:
                results = [_refused(result, over) for result in results]
                made = [reminder for reminder in made if reminder.id not in over]
            summary = {"created": len(made), "invalid": len(items) - len(made), "items": results}
            answer = Answer(200, orjson.dumps(summary))
            if not made:
                return answer
            try:
                return await save_once(
                    self.store, made, answer, key=key, now=now, assignees=assignees
                )
            except ListGone as gone:  # deleted since it was read: its items alone are refused
                over = _gone_items(gone.list_id, made, results)

    async def _batch_lists(
        self, principal: Principal, items: Sequence[Any]
    ) -> dict[str, SharedList | Problem]:
        """Each list a batch's items name, as a single create finds it for the caller (one
        read a list): the list, or why he may not save in it."""
        named = {raw["list"] for raw in items if isinstance(raw, dict) and "list" in raw}
        found: dict[str, SharedList | Problem] = {}
        for list_id in sorted(n for n in named if isinstance(n, str)):
            try:
                found[list_id] = await self.lists.for_reminders(principal, list_id, edits=True)
            except Problem as problem:
                found[list_id] = problem
        return found

    async def _owner_of(self, principal: Principal, item: ReminderIn) -> str:
        """The owner a create saves under: the caller's (`owner_for`), or a list's, when the
        caller may save its reminders (`_item_owner`)."""
        lists: dict[str, SharedList | Problem] = {}
        if item.list_id is not None and item.owner is None:
            try:
                lists[item.list_id] = await self.lists.for_reminders(
                    principal, item.list_id, edits=True
                )
            except Problem as problem:
                lists[item.list_id] = problem
        return _item_owner(principal, item, lists)

    async def _misplaced(
        self, principal: Principal, made: Sequence[Reminder], results: list[dict[str, Any]]
    ) -> dict[str, Problem]:
        """By id, the batch's reminders at a place that is not one of their owner's the
        caller may see: each a 422 naming `items.N.on.place` (each place read once)."""
        index = {result["id"]: result["index"] for result in results if "id" in result}
        seen: dict[tuple[str, str], bool] = {}
        refused: dict[str, Problem] = {}
        for reminder in made:
            if reminder.on is None:
                continue
            key = (reminder.owner, reminder.on.place_id)
            if key not in seen:
                seen[key] = await self.may_ring_at(principal, reminder.owner, reminder.on)
            if not seen[key]:
                field = f"items.{index[reminder.id]}.on.place"
                refused[reminder.id] = _misplaced(field, reminder.owner, reminder.on)
        return refused

    @staticmethod
    def _new(
        principal: Principal, item: ReminderIn, owner: str, now: datetime, *, keyed: bool = False
    ) -> Reminder:
        """The reminder a create makes of `item` (a `say` spelled out first)."""
        return saying.as_said(
            item,
            now,
            lambda spelled: changes.new_reminder(
                spelled,
                owner=owner,
                source=principal.source,
                now=now,
                priority=principal.priority,
                keyed=keyed,
            ),
        )

    def _batch_items(
        self, batch: _Batch, items: Sequence[Any]
    ) -> tuple[list[dict[str, Any]], list[Reminder], dict[str, str]]:
        """Each item's result, the reminders to save, and the assignees of those that are a
        list's and have one (runs in the schedule pool)."""
        results: list[dict[str, Any]] = []
        made: list[Reminder] = []
        assignees: dict[str, str] = {}
        for index, raw in enumerate(items):
            try:
                reminder, assignee = self._budgeted_item(batch, index, raw)
            except Problem as problem:
                results.append({"index": index, "status": "invalid", "problem": problem.to_dict()})
                continue
            made.append(reminder)
            if assignee is not None:
                assignees[reminder.id] = assignee
            results.append(render.batch_created(index, reminder))
        return results, made, assignees

    def _budgeted_item(self, batch: _Batch, index: int, raw: Any) -> tuple[Reminder, str | None]:
        try:
            check_budget()  # the batch's: once it is spent, the items left are not checked
        except ExpansionBudgetExceeded as error:
            raise not_checked(f"items.{index}", error) from None
        try:
            with expansion_budget(REQUEST_SECONDS):
                return self._batch_item(batch, index, raw)
        except ExpansionBudgetExceeded as error:
            given = next(
                (f for f in ("say", "when") if isinstance(raw, dict) and raw.get(f) is not None),
                "repeat",
            )
            raise too_costly(f"items.{index}.{given}", error) from None

    def _batch_item(self, batch: _Batch, index: int, raw: Any) -> tuple[Reminder, str | None]:
        """One item's reminder and assignee, checked as a single create checks it: a
        refusal names `items.N.<field>` (a list the caller may not save in, `items.N.list`)."""
        prefix = f"items.{index}."
        try:
            item = ReminderIn.model_validate(raw)
            owner = _item_owner(batch.principal, item, batch.lists)
            self.check_configured(item.route)
            return self._new(batch.principal, item, owner, batch.now), item.assignee
        except ValidationError as error:
            raise invalid(field_errors(error.errors(), prefix=prefix)) from None
        except Problem as problem:
            fields = [FieldError(prefix + e.field, e.message) for e in problem.errors]
            raise Problem(problem.status, problem.slug, problem.detail, errors=fields) from None

    # -- read ------------------------------------------------------------------------------

    async def get(self, principal: Principal, reminder_id: str, *, edits: bool = False) -> Reminder:
        """The reminder, or 404 when it does not exist or the caller may not see it. A list's
        reminder with a member's token: as his role allows (`edits`: he would change it; a
        viewer is answered 403)."""
        if not is_id(reminder_id):
            raise Problem(404, "not-found", f"no reminder {reminder_id}")
        found = await self.store.get_reminder(reminder_id, now=self.clock.now())
        if found is None:
            raise Problem(404, "not-found", f"no reminder {reminder_id}")
        list_id = list_of(found.owner)
        if list_id is not None and principal.owner is not None:
            try:
                await self.lists.for_reminders(principal, list_id, edits=edits)
            except Problem as problem:
                if problem.status == 404:  # not his list: no more than any other reminder
                    raise Problem(404, "not-found", f"no reminder {reminder_id}") from None
                raise
        elif not principal.may_see_reminder(found):
            raise Problem(404, "not-found", f"no reminder {reminder_id}")
        return (await self.with_triggers([found]))[0]

    async def with_triggers(self, reminders: list[Reminder]) -> list[Reminder]:
        """`reminders`, each that rings at a place with its trigger (`on`): one read of the
        triggers, for those alone (a page of timed reminders reads none)."""
        ids = [r.id for r in reminders if changes.is_at_place(r)]
        found = await self.store.place_triggers(ids) if ids else {}
        return [replace(r, on=found[r.id]) if r.id in found else r for r in reminders]

    async def check_place(
        self, principal: Principal, owner: str, trigger: PlaceTrigger, *, field: str
    ) -> None:
        """422 naming `field` unless the trigger's place is one of `owner`'s that the caller
        may see."""
        if not await self.may_ring_at(principal, owner, trigger):
            raise _misplaced(field, owner, trigger)

    async def may_ring_at(self, principal: Principal, owner: str, trigger: PlaceTrigger) -> bool:
        """Whether the trigger's place is one of `owner`'s that the caller may see."""
        place_id = trigger.place_id
        found = await self.store.get_place(place_id) if is_id(place_id) else None
        return found is not None and visible(found, principal, owner)

    async def list_page(
        self,
        principal: Principal,
        *,
        owner: str | None,
        status: ReminderStatus | None,
        limit: int,
        cursor: str | None,
        list_id: str | None = None,
    ) -> tuple[list[Reminder], str | None]:
        """One page of the owner's reminders, or a list's (`list_id`, for its members and
        its app), and the cursor of the next (None at the end)."""
        if list_id is not None:
            if owner is not None:
                raise invalid([FieldError("owner", "leave out with `list`")])
            listed_owner = (await self.lists.for_reminders(principal, list_id, edits=False)).owner
        else:
            listed_owner = owner_for(principal, owner)
        after = None
        if cursor:
            try:
                after = render.decode_cursor(cursor)
            except ValueError:
                raise invalid([FieldError("cursor", "not a cursor this API gave")]) from None
        rows = await self.store.list_reminders(
            listed_owner,
            status=status,
            source=principal.tenant,
            after_id=after,
            limit=limit + 1,
            now=self.clock.now(),
        )
        page = await self.with_triggers(rows[:limit])
        next_cursor = render.encode_cursor(page[-1].id) if len(rows) > limit else None
        return page, next_cursor

    async def occurrences(
        self, principal: Principal, reminder_id: str, count: int
    ) -> list[Occurrence]:
        """The next `count` rings of a saved reminder, from its next due (none unless
        pending)."""
        found = await self.get(principal, reminder_id)
        due = found.due_at
        if found.status is not ReminderStatus.PENDING or due is None or found.on is not None:
            return []  # a place reminder has no times: it rings when its owner gets there
        return await off_loop(lambda: occurrences(found.schedule, due, count), field="count")

    async def preview(self, body: OccurrencesIn) -> tuple[list[Occurrence], Sentence | None]:
        """The next rings of a schedule that is not saved, from now: checked as a create
        checks it (a refusal names `repeat`, `when` or `say`), then expanded (one that is too
        long, `count`); and for `say`, the words it read as the text and as the time."""
        now = self.clock.now()
        sentence = None
        if body.say is not None:
            say = body.say
            given = body.model_fields_set
            sentence, schedule, due = await off_loop(
                lambda: _said_schedule(body.zone, say, given, now), field="say"
            )
        else:
            schedule, due = await off_loop(
                lambda: changes.schedule_of(
                    zone=body.zone, at=body.at, repeat=body.repeat, when=body.when, now=now
                ),
                field="repeat" if body.when is None else "when",
            )
        found = await off_loop(lambda: occurrences(schedule, due, body.count), field="count")
        return found, sentence

    async def firings(self, principal: Principal, reminder_id: str, limit: int) -> list[Firing]:
        await self.get(principal, reminder_id)
        return await self.store.list_firings(reminder_id, limit=limit)

    # -- change ------------------------------------------------------------------------------

    async def cancel(self, principal: Principal, reminder_id: str) -> Reminder | None:
        """Cancel a pending reminder; 409 saying why when it is not pending. The cancelled
        reminder when a ring of it is on its way all the same (a series whose current
        occurrence was claimed before the cancel landed: it still arrives, nothing after it
        does); None when nothing of it will ring."""
        await self.get(principal, reminder_id, edits=True)
        if await self.store.cancel_reminder(reminder_id, now=self.clock.now()) is None:
            raise cancel_conflict(await self.get(principal, reminder_id))
        cancelled = await self.get(principal, reminder_id)  # with its last firing
        last = cancelled.last_firing
        if last is not None and not last.state.is_final:
            return cancelled
        return None

    async def edit(
        self, principal: Principal, reminder_id: str, patch: ReminderPatch, if_match: str | None
    ) -> Reminder:
        """Apply an edit on the version the caller last saw (`If-Match`)."""
        current = await self.get(principal, reminder_id, edits=True)
        if if_match is None:
            raise Problem(
                428, "precondition-required", "an edit needs If-Match with the reminder's ETag"
            )
        if not render.etag_matches(if_match, current):
            raise stale(current)
        self.check_configured(patch.route)
        assignee = await self._reassigned(principal, current, patch)
        now = self.clock.now()
        updated = await off_loop(
            lambda: changes.edited(current, patch, now=now),
            field="repeat" if patch.when is None else "when",
        )
        if updated.on is not None and updated.on != current.on:
            await self.check_place(principal, current.owner, updated.on, field="on.place")
        saved = await self.store.update_reminder(
            updated, expected_version=current.version, waiting=current.due_at, assignee=assignee
        )
        if saved is None:
            raise stale(await self.get(principal, reminder_id))
        return replace(saved, on=updated.on)

    async def _reassigned(
        self, principal: Principal, current: Reminder, patch: ReminderPatch
    ) -> str | Keep | None:
        """What an edit makes of a reminder's assignee (`KEEP`: nothing); a 422 naming
        `assignee` for one not on the reminder's list, or given for a reminder of no list,
        and `channel` for the feed on a list's reminder."""
        list_id = list_of(current.owner)
        if list_id is None:
            if "assignee" in patch.model_fields_set:
                raise invalid([FieldError("assignee", "only a list's reminder has an assignee")])
            return KEEP
        if patch.route is not None:
            _no_feed_for_a_list(patch.route)
        if "assignee" not in patch.model_fields_set:
            return KEEP
        if patch.assignee is not None:
            shared = await self.lists.for_reminders(principal, list_id, edits=True)
            if shared.member(patch.assignee) is None:
                detail = f"{patch.assignee} is not on list {list_id}: invite him first"
                raise invalid([FieldError("assignee", detail)])
        return patch.assignee

    async def done(self, principal: Principal, firing_id: str) -> Firing:
        """Mark a ring done, and take back what is left of its occurrence's nags (`until_done`):
        the nag that waits is taken back as an edit takes back an occurrence, so a done that
        answered stops every nag not claimed by then (409 when claims kept taking them first:
        the ring is marked, a retry stops the rest). 404 for a ring that is not there (or not
        yet written: its first try is on its way)."""
        reminder_id, _, second = firing_id.rpartition(".")
        if not is_id(reminder_id) or not second.isdigit() or len(second) > 11:
            raise Problem(404, "not-found", f"no ring {firing_id}")
        await self.get(principal, reminder_id, edits=True)
        now = self.clock.now()
        marked = await self.store.mark_done(firing_id, now)
        if marked is None:
            raise Problem(404, "not-found", f"no ring {firing_id} (yet)")
        for _ in range(_RETRIES):
            current = await self.get(principal, reminder_id)
            if current.due_at is None:
                break
            stop, following = changes.after_done(current, marked.due_at, now=now)
            if not stop:
                break
            saved = await self.store.update_reminder(
                following, expected_version=current.version, waiting=current.due_at
            )
            if saved is not None:
                break
        else:  # a claim took each nag first: marked, but the next may still ring
            raise Problem(
                409, "conflict", "the reminder kept ringing while stopping its nags; retry"
            )
        return marked

    async def act(self, signed: SignedAction) -> tuple[int, Firing | Reminder]:
        """What a ring's action link asks, done as the API does it: a done as `done` (200,
        the ring; a second keeps the first instant), a snooze as `snooze` of ten minutes
        (200 moved, 201 a new one-off; a repeat is `already-snoozed`), so every race those
        answer holds for a link too."""
        if signed.action is Action.DONE:
            return 200, await self.done(LINK_HOLDER, signed.firing_id)
        return await self.snooze(LINK_HOLDER, signed.reminder_id, SnoozeIn(snooze=SNOOZE))

    async def snooze(
        self, principal: Principal, reminder_id: str, asked: SnoozeIn
    ) -> tuple[int, Reminder]:
        """Snooze: a pending one-off moves (200); a ring that went off, or a series' last
        ring, becomes a fresh one-off linked to it (201)."""
        for _ in range(_RETRIES):
            current = await self.get(principal, reminder_id, edits=True)
            now = self.clock.now()
            due = changes.snooze_due(current, asked, now=now)
            if not changes.is_pending_one_off(current):
                return 201, await self._snooze_ring(current, due)
            moved = changes.moved_one_off(current, due, now=now)
            saved = await self.store.update_reminder(
                moved, expected_version=current.version, waiting=current.due_at
            )
            if saved is not None:
                return 200, saved
        raise Problem(409, "conflict", "the reminder kept changing while snoozing it; retry")

    async def _snooze_ring(self, current: Reminder, due: datetime) -> Reminder:
        if current.status is ReminderStatus.CANCELLED:
            raise Problem(409, "cancelled", "a cancelled reminder cannot be snoozed")
        ring = current.last_firing
        if ring is None:
            raise Problem(409, "not-rung", "the series has not rung yet: nothing to snooze")
        copy = changes.snoozed_copy(current, ring.id, due, now=self.clock.now())
        # A list's ring snoozed stays its assignee's: the new one-off rings him alone too.
        assignee = (await self.assignees([current])).get(current.id)
        try:
            snoozed_by = await self.store.snooze_firing(ring.id, copy, assignee=assignee)
        except ListGone as gone:
            detail = f"list {gone.list_id} was deleted: its rings are not snoozed"
            raise Problem(409, "list-deleted", detail) from None
        if snoozed_by != copy.id:
            raise _not_snoozed(ring.id, snoozed_by)
        return copy


def _item_owner(
    principal: Principal, item: ReminderIn, lists: Mapping[str, SharedList | Problem]
) -> str:
    """The owner an item (a create's body, a batch's item) saves under: the caller's
    (`owner_for`), or its list's (`lists`: found for the caller, or why he may not save in
    it); 422 naming `list`, `owner`, `assignee` or `channel` for one that cannot be either,
    and a list's own refusal (403 `viewer`) naming `list`."""
    if item.list_id is None:
        if item.assignee is not None:
            raise invalid([FieldError("assignee", "only a list's reminder has an assignee")])
        return owner_for(principal, item.owner)
    if item.owner is not None:
        detail = "leave out with `list`: the reminder is the list's"
        raise invalid([FieldError("owner", detail), *_feed_errors(item.route)])
    _no_feed_for_a_list(item.route)
    found = lists.get(item.list_id) or Problem(404, "not-found", f"no list {item.list_id}")
    if isinstance(found, Problem):
        if found.status != 404:
            errors = [FieldError("list", found.detail)]
            raise Problem(found.status, found.slug, found.detail, errors=errors)
        raise invalid([FieldError("list", found.detail)])
    if item.assignee is not None and found.member(item.assignee) is None:
        detail = f"{item.assignee} is not on list {found.id}: invite him first"
        raise invalid([FieldError("assignee", detail)])
    return found.owner


def _gone_items(
    list_id: str, made: Sequence[Reminder], results: Sequence[dict[str, Any]]
) -> dict[str, Problem]:
    """By id, a batch's reminders in list `list_id`, deleted while the batch was saved: each
    a 422 naming `items.N.list`."""
    owner = LIST_OWNER + list_id
    index = {result["id"]: result["index"] for result in results if "id" in result}
    detail = f"no list {list_id}: it was deleted"
    return {
        r.id: invalid([FieldError(f"items.{index[r.id]}.list", detail)])
        for r in made
        if r.owner == owner
    }


def _misplaced(field: str, owner: str, trigger: PlaceTrigger) -> Problem:
    return invalid([FieldError(field, f"no place {trigger.place_id} of {owner}'s")])


def _not_snoozed(firing_id: str, snoozed_by: str | None) -> Problem:
    """Why a ring was not snoozed, as the store's mark found it (never read again after it:
    the ring's first write could land in between, and a ring on its way look snoozed by
    nobody)."""
    if snoozed_by is None:  # on its way: its firing is written with its first try's outcome
        detail = f"its last ring {firing_id} is being sent now: snooze it once it rang"
        return Problem(409, "ringing", detail, headers={"Retry-After": "1"})
    detail = f"its last ring {firing_id} was snoozed already"
    return Problem(409, "already-snoozed", detail, extra={"snoozed_by": snoozed_by})


def _said_schedule(
    zone: str, say: str, given: set[str], now: datetime
) -> tuple[Sentence, Schedule, datetime]:
    """A one-box sentence's words, schedule and first ring, errors naming `say`."""
    sentence = saying.sentence_of(say, zone=zone, given=given, now=now)
    try:
        schedule, due = changes.schedule_of(
            zone=zone, at=sentence.at, repeat=sentence.repeat, now=now
        )
    except InvalidInput as error:
        field = "say" if error.field in ("at", "repeat") else error.field
        raise InvalidInput(field, error.message) from None
    return sentence, schedule, due


def _feed_errors(route: Route) -> list[FieldError]:
    """A list's reminder rings its members' contacts: the in-app feed (one owner's open
    pages) is not one of its channels."""
    detail = "a list's reminder rings its members' contacts: the in-app feed is one owner's"
    return [FieldError(field, detail) for field, c in fields_of(route) if c is Channel.INAPP]


def _no_feed_for_a_list(route: Route) -> None:
    errors = _feed_errors(route)
    if errors:
        raise invalid(errors)


def stale(current: Reminder) -> Problem:
    tag = render.etag_of(current)
    return Problem(
        412,
        "precondition-failed",
        f"the reminder changed since you read it: its ETag is now {tag}",
        headers={"ETag": tag},
    )


def cancel_conflict(current: Reminder) -> Problem:
    """Why a reminder could not be cancelled, from its row as it is now."""
    ring = current.last_firing
    reasons = {
        ReminderStatus.CANCELLED: ("already-cancelled", "it was cancelled already"),
        ReminderStatus.ENDED: ("ended", "the series has no occurrence left"),
        ReminderStatus.PENDING: ("conflict", "it changed while cancelling it; retry"),
    }
    if current.status is ReminderStatus.FIRED:
        if ring is not None and ring.state in _RINGING:
            slug, detail = "ringing", "it is ringing now"
        else:
            slug, detail = "already-rang", "it already rang"
    else:
        slug, detail = reasons[current.status]
    extra: dict[str, Any] = {"reminder_status": current.status.value}
    if ring is not None:
        extra["last_firing"] = {"id": ring.id, "state": ring.state.value}
    return Problem(409, slug, detail, extra=extra)


def _refused(result: dict[str, Any], over: dict[str, Problem]) -> dict[str, Any]:
    """A batch item's result, made `invalid` with its problem when the cap refused it."""
    problem = over.get(result.get("id", ""))
    if problem is None:
        return result
    return {"index": result["index"], "status": "invalid", "problem": problem.to_dict()}
