"""The load of a chaos run, all through `tocsin api` over HTTP: one-off webhook reminders
created in batches a while before they are due, and cancels, snoozes and edits aimed at
reminders in their due second, each with what it answered."""

from __future__ import annotations

import asyncio
import bisect
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from tocsin_bench.chaos_plan import ChaosSpec, Plan
from tocsin_bench.progress import note

BATCH_ITEMS = 1000  # the API's largest batch
RETRY_PAUSE = 0.5  # seconds between tries of a batch the API did not take
REQUEST_TIMEOUT = 10.0
# A race targets a reminder in its due second: due from RACE_BEHIND seconds ago (it may be
# ringing: cancels then answer 409, snoozes 201 with a follow-up) to RACE_AHEAD from now.
RACE_BEHIND, RACE_AHEAD = 1.0, 1.0
RACE_KINDS = ("cancel", "snooze", "edit")
OWNERS = 5000  # owners spread over every shard, so every part has work
PROBLEM = "application/problem+json"


@dataclass
class Race:
    """One cancel, snooze or edit, and what it answered (status 0: no answer)."""

    kind: str
    reminder_id: str
    due: int  # the due second it was aimed at
    sent_at: float
    status: int = 0
    new_due: int | None = None  # snooze/edit 200: the reminder's new due second
    new_id: str | None = None  # snooze 201: the follow-up reminder
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Ledger:
    """What the API said it saved (id → due second, and its ETag as saved) and every race
    made."""

    due: dict[str, int] = field(default_factory=dict)
    etags: dict[str, str] = field(default_factory=dict)
    by_due: list[tuple[int, str]] = field(default_factory=list)  # in due order
    not_created: int = 0
    batch_retries: int = 0
    answers: Counter[int] = field(default_factory=Counter)  # every create's status (0: none)
    unreadable_503: int = 0  # 503s without Retry-After or not application/problem+json
    races: list[Race] = field(default_factory=list)

    def add(self, reminder_id: str, due: int, etag: str) -> None:
        self.due[reminder_id] = due
        self.etags[reminder_id] = etag
        self.by_due.append((due, reminder_id))

    def note_answer(self, response: httpx.Response | None) -> None:
        """Count a create's answer; a 503 must say when to retry, as a problem."""
        status = 0 if response is None else response.status_code
        self.answers[status] += 1
        if response is not None and status == 503:
            problem = response.headers.get("content-type", "").startswith(PROBLEM)
            if not problem or "retry-after" not in response.headers:
                self.unreadable_503 += 1


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch_of(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


class Creator:
    """Creates the run's reminders, `rate` due at each second of the window, each batch
    `create_ahead` seconds before its first is due, retrying (same Idempotency-Key) while the
    API cannot take it — as an app would through an outage."""

    def __init__(self, spec: ChaosSpec, plan: Plan, client: httpx.AsyncClient, ledger: Ledger):
        self._spec, self._plan, self._client, self._ledger = spec, plan, client, ledger

    async def run(self) -> None:
        dues = [
            self._plan.first_due + second
            for second in range(int(self._plan.duration))
            for _ in range(self._spec.rate)
        ]
        for number, start in enumerate(range(0, len(dues), BATCH_ITEMS)):
            batch = dues[start : start + BATCH_ITEMS]
            await _sleep_until(batch[0] - self._plan.create_ahead)
            await self._create(number, start, batch)

    async def _create(self, number: int, first_index: int, dues: list[int]) -> None:
        items = [
            {
                "owner": f"owner-{(first_index + n) % OWNERS}",
                "text": f"chaos {first_index + n}",
                "channel": "webhook",
                "zone": "UTC",
                "at": iso(due),
                "freshness": f"{self._spec.freshness}s",
            }
            for n, due in enumerate(dues)
        ]
        headers = {"Idempotency-Key": f"chaos-batch-{number}"}
        while time.time() < dues[-1]:
            try:
                response = await self._client.post(
                    "/v1/reminders:batch", json={"items": items}, headers=headers
                )
            except httpx.HTTPError:
                response = None
            self._ledger.note_answer(response)
            if response is not None and response.status_code == 200:
                self._record(response.json(), dues)
                return
            self._ledger.batch_retries += 1
            await asyncio.sleep(RETRY_PAUSE)
        note(f"chaos: batch {number} could not be created before its last due")
        self._ledger.not_created += len(dues)

    def _record(self, answer: dict[str, Any], dues: list[int]) -> None:
        for item in answer["items"]:
            if item["status"] == "created":
                self._ledger.add(item["id"], dues[item["index"]], item["etag"])
            else:  # due too soon after an outage: the API refuses a one-off in the past
                self._ledger.not_created += 1


class Racer:
    """`races_per_second` cancels, snoozes and edits in turn, each aimed at a reminder in
    its due second, none at the same reminder twice."""

    def __init__(self, spec: ChaosSpec, plan: Plan, client: httpx.AsyncClient, ledger: Ledger):
        self._spec, self._plan, self._client, self._ledger = spec, plan, client, ledger
        self._rng = random.Random(spec.seed)
        self._taken: set[str] = set()
        self._running: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        pause = 1.0 / self._spec.races_per_second
        turn = 0
        while time.time() < self._plan.last_due:
            await asyncio.sleep(pause * self._rng.uniform(0.5, 1.5))
            target = self._target()
            if target is None:
                continue
            race = Race(RACE_KINDS[turn % 3], target[1], target[0], time.time())
            turn += 1
            self._ledger.races.append(race)
            task = asyncio.create_task(self._send(race))
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        if self._running:
            await asyncio.wait(self._running)

    def _target(self) -> tuple[int, str] | None:
        """A reminder due in (now - RACE_BEHIND, now + RACE_AHEAD], not raced before."""
        now = time.time()
        by_due = self._ledger.by_due
        low = bisect.bisect_right(by_due, (int(now - RACE_BEHIND), "~"))
        high = bisect.bisect_right(by_due, (int(now + RACE_AHEAD), "~"))
        candidates = [pair for pair in by_due[low:high] if pair[0] > now - RACE_BEHIND]
        self._rng.shuffle(candidates)
        for due, reminder_id in candidates[:50]:
            if reminder_id not in self._taken:
                self._taken.add(reminder_id)
                return due, reminder_id
        return None

    async def _send(self, race: Race) -> None:
        path = f"/v1/reminders/{race.reminder_id}"
        try:
            if race.kind == "cancel":
                response = await self._client.delete(path)
            elif race.kind == "snooze":
                response = await self._client.patch(path, json={"snooze": f"{self._spec.snooze}s"})
            else:
                # The ETag the batch answered: no read between us and the due second, and a
                # ring since (the ETag names the occurrence that waits) makes the edit stale.
                body = {"at": iso(race.due + self._spec.edit_by)}
                match = {"If-Match": self._ledger.etags[race.reminder_id]}
                response = await self._client.patch(path, json=body, headers=match)
        except httpx.HTTPError as error:
            race.error = f"{type(error).__name__}: {error}"
            return
        race.status = response.status_code
        _read_answer(race, response)


def _read_answer(race: Race, response: httpx.Response) -> None:
    """The new due (a moved reminder) or the follow-up (a snooze of a rung one) it answered."""
    if race.status not in (200, 201):
        race.error = response.text[:300] or None
        return
    body = response.json()
    next_due = epoch_of(body["next"]) if body.get("next") else None
    if race.status == 201:
        race.new_id, race.new_due = body["id"], next_due
    else:
        race.new_due = next_due


async def _sleep_until(epoch: float) -> None:
    await asyncio.sleep(max(0.0, epoch - time.time()))
