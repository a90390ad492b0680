"""Idempotency keys: a retried POST gets the first answer back, never a second reminder.

The answer is saved in the same transaction as the reminders it created, so a crash can
never leave reminders without their answer, or an answer without its reminders. A key is
scoped to its caller; the same key with another body is a client bug, answered 422.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from tocsin.api.problems import FieldError, Problem, invalid_field
from tocsin.domain import IdempotencyRecord, Reminder
from tocsin.errors import DuplicateIdempotencyKey
from tocsin.store.ports import ReminderStore

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255


@dataclass(frozen=True, slots=True)
class Answer:
    """A status and a JSON body, as first given (and as replayed)."""

    status: int
    body: bytes
    replayed: bool = False


@dataclass(frozen=True, slots=True)
class IdempotencyKey:
    """A request's key, who sent it, and what it asked for."""

    scope: str
    key: str
    request_hash: str


def idempotency_key(
    key: str | None, *, scope: str, method: str, path: str, payload: Any
) -> IdempotencyKey | None:
    """The request's key (None without the header); 422 for an unusable key."""
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not key.isprintable() or not key.isascii():
        raise invalid_field(HEADER, f"must be 1-{MAX_KEY_LENGTH} printable ASCII characters")
    canonical = _canonical(payload)
    digest = hashlib.sha256(f"{method} {path}\n".encode() + canonical).hexdigest()
    return IdempotencyKey(scope=scope, key=key, request_hash=digest)


def _canonical(payload: Any) -> bytes:
    try:
        return orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        # A batch's items are hashed as sent, before each is checked, and orjson cannot write
        # an integer beyond 64 bits or nesting deeper than 254 (such an item is refused on its
        # own later). The standard library can; only what orjson refuses takes this path, so
        # every other request keeps the hash it had.
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode()


async def find_answer(store: ReminderStore, key: IdempotencyKey | None) -> Answer | None:
    """The first answer to this key, when there was one (422 when it was another request)."""
    if key is None:
        return None
    record = await store.find_idempotency(key.scope, key.key)
    return _replay(record, key) if record is not None else None


async def save_once(
    store: ReminderStore,
    reminders: Sequence[Reminder],
    answer: Answer,
    *,
    key: IdempotencyKey | None,
    now: datetime,
    cap: int = 0,
    assignees: Mapping[str, str] | None = None,
) -> Answer:
    """Save the reminders with their answer; when another request with the key won, its
    answer instead (nothing of this one is saved). `cap`, `assignees`: see
    `Store.add_reminders`."""
    record = None
    if key is not None:
        record = IdempotencyRecord(
            scope=key.scope,
            key=key.key,
            request_hash=key.request_hash,
            status_code=answer.status,
            body=answer.body,
            created_at=now,
        )
    try:
        await store.add_reminders(reminders, idempotency=record, cap=cap, assignees=assignees)
    except DuplicateIdempotencyKey:
        assert key is not None
        earlier = await find_answer(store, key)
        if earlier is None:
            raise Problem(409, "conflict", "a request with this key is in flight; retry") from None
        return earlier
    return answer


def _replay(record: IdempotencyRecord, key: IdempotencyKey) -> Answer:
    if record.request_hash != key.request_hash:
        detail = "this key was used before with another request body"
        raise Problem(422, "idempotency-key-reused", detail, errors=[FieldError(HEADER, detail)])
    return Answer(status=record.status_code, body=record.body, replayed=True)
