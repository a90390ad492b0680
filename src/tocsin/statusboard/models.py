"""The shape of `GET /v1/status`, as `/openapi.json` documents it."""

from __future__ import annotations

from pydantic import BaseModel, Field
from pydantic.config import JsonDict

# Sent as RFC 3339 strings (`…Z`); declared so that generated clients read datetimes.
_INSTANT: JsonDict = {"format": "date-time"}


class WorkerOut(BaseModel):
    id: str = Field(description="The worker's id: host, process id and a random suffix.")
    heartbeat_at: str = Field(
        description="Its last lease renewal (UTC).", json_schema_extra=_INSTANT
    )
    alive: bool = Field(description="Renewed within the lease time: it counts for the parts.")
    parts: list[int] = Field(description="The scheduler parts it holds a lease on now.")
    breakers: list[str] = Field(
        description="Providers whose circuit breaker it reported open at its last renewal."
    )


class MinuteAheadOut(BaseModel):
    minute: str = Field(description="The UTC minute (a bucket).", json_schema_extra=_INSTANT)
    due: int = Field(description="Pending reminders due in it, counted up to `ahead.cap`.")


class AheadOut(BaseModel):
    cap: int = Field(description="Each count stops here: a count equal to it means at least.")
    overdue: int = Field(description="Pending reminders due before this minute (up to `cap`).")
    minutes: list[MinuteAheadOut] = Field(description="This minute and the 59 after it.")


class LatenessOut(BaseModel):
    p50: float = Field(description="Median seconds from due to sent.")
    p99: float
    max: float


class MinuteRingsOut(BaseModel):
    minute: str = Field(
        description="The UTC minute the firings were due in.", json_schema_extra=_INSTANT
    )
    sent: int
    failed: int
    expired: int
    waiting: int = Field(description="Not settled yet: queued for a retry, or being sent.")
    sampled: bool = Field(
        description="The minute had more firings than `rings.per_minute`: the counts and "
        "lateness are of its earliest due ones."
    )
    lateness: LatenessOut | None = Field(description="Of the sent ones; null when none.")


class RingsOut(BaseModel):
    per_minute: int = Field(description="At most this many firings are read per minute.")
    minutes: list[MinuteRingsOut] = Field(description="The last 60 minutes, this one last.")


class QueueOut(BaseModel):
    cap: int = Field(description="Each count stops here: a count equal to it means at least.")
    queued: int = Field(description="Firings waiting for a sender (retries, handed back).")
    sending: int = Field(description="Firings a worker is sending now.")
    quiet: int = Field(
        description="Of the queued (the first `cap` of them), bulk rings waiting for their "
        "owner's quiet hours to end."
    )


class BreakerOut(BaseModel):
    worker: str
    provider: str = Field(description="`channel` or `channel:host` (webhook, Web Push).")


class StatusOut(BaseModel):
    as_of: str = Field(
        description="When this was read (UTC); it is kept a few seconds.",
        json_schema_extra=_INSTANT,
    )
    parts: int = Field(description="The scheduler part count (`TOCSIN_PARTS`).")
    lease_seconds: float = Field(description="A worker silent this long is not alive.")
    workers: list[WorkerOut]
    ahead: AheadOut
    rings: RingsOut
    queue: QueueOut
    breakers: list[BreakerOut] = Field(description="Open circuit breakers of live workers.")
