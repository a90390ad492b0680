"""The API's request and response shapes (they are also what `/openapi.json` shows).

Requests forbid unknown fields, so a typo (`repat`) is an error rather than a field quietly
ignored. Strings may not hold NUL characters: PostgreSQL cannot store them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, ClassVar, Literal, Self

import orjson
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    StrictBool,
    StringConstraints,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic.config import JsonDict, JsonValue
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from tocsin.api.routing import CHANNEL_SCHEMA, FALLBACK_SCHEMA, ROUTE_FIELDS, parse_route
from tocsin.channels.contacts import VALIDATORS
from tocsin.domain import (
    Channel,
    FiringState,
    Once,
    Outcome,
    PlaceEvent,
    Priority,
    ReminderStatus,
    Role,
    Route,
)

OWNER_PATTERN = r"^[A-Za-z0-9._:@-]{1,128}$"
LIST_ID_PATTERN = r"^[0-9a-z]{20}$"
# An answer's moment, as RFC 3339 writes it (UTC `…Z`, or a zone's time with its offset):
# sent as the string it is, declared so that generated clients read it as a date-time.
Instant = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
MAX_METADATA_BYTES = 4096
MAX_BATCH = 1000
DEFAULT_FRESHNESS = "10m"
SNOOZE_FIELDS = frozenset({"snooze", "snooze_until"})
_PRIORITY = (
    "`urgent` or `bulk` (digests, newsletters): when not every ring can go at once, urgent "
    "rings are claimed and sent first. Unless given, the priority of the app key that saves "
    "it (`tocsin keys create … --priority bulk`), else `urgent`."
)
# The fields an edit may not set to null (`changes.check_patch`).
NOT_NULL = (
    "alerts",
    "until_done_max",
    "text",
    "channel",
    "fallback",
    "zone",
    "when",
    "on",
    "freshness",
    "priority",
    "ignore_quiet_hours",
)
_ALERTS = (
    "Early alerts: extra rings before each occurrence, each a lead (`1d`, `2h`, `15m`; a "
    "minute to four weeks, at most 5). Whole days count on the local clock: `1d` before "
    "Monday 09:00 is Sunday 09:00, across a change of the clocks too; the rest is elapsed "
    "time. Each rings with its own identity and the reminder's text."
)
_UNTIL_DONE = (
    "Ring again this long after each occurrence (`5m`; a minute to a day) until a ring of it "
    "is marked done, at most `until_done_max` times and never once the next occurrence comes. "
    "Null: it rings once."
)
UNTIL_DONE_MAX = 6  # nags of an occurrence unless a reminder says
_UNTIL_DONE_MAX = (
    f"With `until_done`: how many times it rings again at most (1-100, default {UNTIL_DONE_MAX})."
)
Alerts = Annotated[
    list[Annotated[str, StringConstraints(max_length=64)]],
    Field(max_length=64, description=_ALERTS, examples=[["1d", "15m"]]),
]
_IGNORE_QUIET_HOURS = (
    "Whether its bulk rings go through its owner's quiet hours instead of waiting until they "
    "end (urgent rings always do). Default false."
)


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _plain_json(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        size = len(orjson.dumps(value))
    except orjson.JSONEncodeError as error:
        why = "nested at most 254 deep" if "ecursion" in str(error) else "integers within 64 bits"
        raise ValueError(f"must be plain JSON ({why})") from None
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"must be at most {MAX_METADATA_BYTES} bytes as JSON, is {size}")
    if _has_nul(value):
        raise ValueError("must not contain NUL characters")
    return value


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


Text = Annotated[
    str,
    Field(min_length=1, max_length=1000, examples=["Water the plants"]),
    AfterValidator(_not_blank),
]
Owner = Annotated[str, Field(pattern=OWNER_PATTERN, examples=["ana"])]
ListId = Annotated[
    str,
    Field(pattern=LIST_ID_PATTERN, examples=["01jd8x3k2m9q4r7s5t6v"], description="A list's id."),
]
Label = Annotated[str, Field(max_length=100, examples=["Ana's phone"]), AfterValidator(_no_nul)]
Zone = Annotated[
    str, Field(min_length=1, max_length=64, examples=["America/New_York"]), AfterValidator(_no_nul)
]
At = Annotated[str, Field(max_length=64, examples=["2026-10-26T09:00"]), AfterValidator(_no_nul)]
Repeat = Annotated[
    str, Field(max_length=500, examples=["every Monday 09:00"]), AfterValidator(_no_nul)
]
When = Annotated[
    str,
    Field(
        max_length=500,
        examples=["tomorrow 9am"],
        description="What a person typed: a one-off (`18:00`, `tomorrow 9am`, `in 10 "
        "minutes`, `2026-12-24 18:00`) or a repeat (`every Monday at 9am`, an RRULE); the "
        "server decides which. Instead of `at` and `repeat`, not with them.",
    ),
    AfterValidator(_no_nul),
]
Say = Annotated[
    str,
    Field(
        max_length=1000,
        examples=["call mom tomorrow at 18:00"],
        description="What a person typed in one box, the words and the time together: "
        "`call mom at 18:00`, `tomorrow 9am dentist`, `remind me in an hour to stretch`, "
        "`every weekday at 8:30 standup`. The time is read from its start or its end as "
        "`when` reads it; the rest is the reminder's `text`. Instead of `text` and `when` "
        "(and `at`, `repeat`), not with them.",
    ),
    AfterValidator(_no_nul),
]
Duration = Annotated[str, Field(max_length=32, examples=["10m"]), AfterValidator(_no_nul)]
Metadata = Annotated[dict[str, Any] | None, AfterValidator(_plain_json)]
# Checked by `routing.parse_route` (see `_Routed`), which names a list's item at fault
# (`channel[1]`); the schema says what it accepts.
ChannelIn = Annotated[Any, WithJsonSchema(CHANNEL_SCHEMA)]
FallbackIn = Annotated[Any, WithJsonSchema(FALLBACK_SCHEMA)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Routed(_Request):
    """A body that may name channels (`channel` or `fallback`). They are checked with the
    other fields, so that a 422 names every field at fault at once, and a list's item by
    its index (`channel[1]`), which a field validator cannot say."""

    _route: Route | None = PrivateAttr(default=None)
    route_optional: ClassVar[bool] = False  # an edit may leave the channels as they are

    @property
    def route(self) -> Route | None:
        """The channels named (None: an edit that keeps them)."""
        return self._route

    @model_validator(mode="wrap")
    @classmethod
    def _check_route(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        if not isinstance(data, dict) or (cls.route_optional and not data.keys() & ROUTE_FIELDS):
            return handler(data)
        route, errors = parse_route(data.get("channel"), data.get("fallback"), given=set(data))
        found: list[InitErrorDetails] = [
            {"type": PydanticCustomError("channels", e.message), "loc": (e.field,), "input": data}
            for e in errors
        ]
        found += cls._missing(data)
        try:
            model = handler(data)
        except ValidationError as error:
            if not found:
                raise
            others = [_detail(e) for e in error.errors()]
            raise ValidationError.from_exception_data(cls.__name__, others + found) from None
        if found:
            raise ValidationError.from_exception_data(cls.__name__, found)
        model._route = route
        return model

    @classmethod
    def _missing(cls, data: dict[str, Any]) -> list[InitErrorDetails]:
        """Fields required only without another (named with the channels' errors)."""
        return []


def _detail(error: ErrorDetails) -> InitErrorDetails:
    detail: InitErrorDetails = {"type": error["type"], "loc": error["loc"], "input": error["input"]}
    if "ctx" in error:
        detail["ctx"] = error["ctx"]
    return detail


# The schema of a body that needs `at`, `repeat` or both, `when` or `say`, not null
# (`changes.schedule_of`): "not (`at`, `repeat`, `when` and `say` each absent or null)". Said with
# `not` rather than `anyOf` because openapi-python-client turns a top-level `anyOf` into one
# class per branch holding only that branch's field, losing every other field of the body.
_AT_OR_REPEAT: JsonDict = {
    "not": {
        "properties": {
            "at": {"type": "null"},
            "repeat": {"type": "null"},
            "when": {"type": "null"},
            "say": {"type": "null"},
            "on": {"type": "null"},
        }
    },
}

ClockTimeText = Annotated[
    str, Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$", examples=["22:00"])
]


class PlaceTriggerIn(_Request):
    """What rings a reminder at a place instead of a time: the owner's device reporting
    `event` at `place` (`POST /v1/owners/{owner}/places/{place}/events`), only inside the
    local window from `after` to `before` in the reminder's zone when either is given, and at
    most `once` a local day or ever."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"place": "06h2t0k5f07g6e1x9q3d", "event": "arrive", "after": "17:00"}]
        },
    )

    place: str = Field(
        min_length=1, max_length=40, description="The place's id: one of the owner's places."
    )
    event: PlaceEvent = Field(
        default=PlaceEvent.ARRIVE, description="`arrive` (default) or `leave`."
    )
    after: ClockTimeText | None = Field(
        default=None,
        description="HH:MM, local time in the reminder's zone: ring only from then on "
        "(included); alone, until midnight.",
        examples=["17:00"],
    )
    before: ClockTimeText | None = Field(
        default=None,
        description="HH:MM, local time: ring only before then (excluded); before `after`: "
        "the next day; alone, from midnight.",
        examples=["23:00"],
    )
    once: Once | None = Field(
        default=None,
        description="`day`: at most once a local day (the day its window began); `ever`: "
        "once, then never again; null: at every crossing that is not a repeat.",
    )


class ReminderIn(_Routed):
    """A reminder to save: `text` with `at`, `repeat` or both, or `when`; or `say` alone,
    the words and the time in one sentence (`text` is then what it says beside the time).
    `owner` is required with an API key; with an owner token it may be left out (it is the
    token's) or must be the token's (else 403). The schema cannot make a field's presence
    depend on the credential, so it lists `owner` as optional: a create with an API key and
    no `owner` is answered 422 naming `owner`; nor `text`'s on `say`, so a body with neither
    is answered 422 naming `text`."""

    model_config = ConfigDict(
        json_schema_extra={
            **_AT_OR_REPEAT,
            "examples": [
                {
                    "owner": "ana",
                    "text": "Water the plants",
                    "channel": "log",
                    "zone": "America/New_York",
                    "repeat": "every Monday 09:00",
                },
                {
                    "owner": "ana",
                    "say": "call mom tomorrow at 18:00",
                    "channel": "inapp",
                    "zone": "Europe/Paris",
                },
                {
                    "owner": "ana",
                    "text": "Take the bins out",
                    "channel": "apns",
                    "zone": "Europe/Berlin",
                    "on": {"place": "06h2t0k5f07g6e1x9q3d", "after": "17:00", "once": "day"},
                },
            ],
        }
    )

    owner: Owner | None = None
    text: Annotated[Text, AfterValidator(_no_nul)] | None = Field(
        default=None, description="What to say; required unless `say` gives it."
    )
    channel: ChannelIn = None
    fallback: FallbackIn = None
    zone: Zone
    at: At | None = None
    repeat: Repeat | None = None
    when: When | None = None
    say: Say | None = None
    on: PlaceTriggerIn | None = Field(
        default=None,
        description='Ring at a place instead of a time ("when I get home"): instead of '
        "`at`, `repeat`, `when` and `say`, not with them.",
    )
    freshness: Duration = DEFAULT_FRESHNESS
    metadata: Metadata = None
    priority: Priority | None = Field(default=None, description=_PRIORITY)
    ignore_quiet_hours: StrictBool = Field(default=False, description=_IGNORE_QUIET_HOURS)
    alerts: Alerts = []
    until_done: Duration | None = Field(default=None, description=_UNTIL_DONE, examples=["5m"])
    until_done_max: int | None = Field(default=None, ge=1, le=100, description=_UNTIL_DONE_MAX)
    list_id: ListId | None = Field(
        default=None,
        alias="list",
        description="A shared list's id: the reminder is the list's (leave `owner` out) and "
        "rings every member who joined it, each on his own contacts. Needs an owner token of "
        "a member who may edit (`owner` or `editor`), or a key of the list's app.",
    )
    assignee: Owner | None = Field(
        default=None,
        description="With `list`: the one member it rings (he must be on the list; while he "
        "has not joined it rings nobody).",
    )

    @property
    def route(self) -> Route:
        """The channels named (validation requires them)."""
        assert self._route is not None
        return self._route

    @classmethod
    def _missing(cls, data: dict[str, Any]) -> list[InitErrorDetails]:
        """`text`, unless `say` gives it."""
        if data.get("text") is not None or data.get("say") is not None:
            return []
        if "text" in data:  # null: its own validation says so
            return []
        return [{"type": "missing", "loc": ("text",), "input": data}]


class BatchIn(_Request):
    """Up to 1,000 reminders, each validated on its own."""

    items: list[Any] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description="Each item is a reminder, as `POST /v1/reminders` takes it (a shared "
        "list's with `list` and `assignee`, checked as a create checks it: a refusal names "
        "`items.N.<field>`).",
        examples=[
            [
                {
                    "owner": "bob",
                    "text": "Stretch",
                    "repeat": "weekdays at 8:30",
                    "zone": "Europe/Lisbon",
                    "channel": "inapp",
                },
                {
                    "list": "06h2t0k5f07g6e1x9q3d",
                    "assignee": "ana",
                    "text": "Bins out",
                    "repeat": "every Tuesday 19:00",
                    "zone": "Europe/Berlin",
                    "channel": "apns",
                },
            ]
        ],
    )


def _not_null(schema: JsonDict, names: Iterable[str]) -> None:
    """Drop the `null` branch of these fields' schemas: a null there is refused (422)."""
    properties = schema["properties"]
    assert isinstance(properties, dict)
    for name in names:
        field = properties[name]
        assert isinstance(field, dict)
        branches = field.get("anyOf")
        if not isinstance(branches, list) or {"type": "null"} not in branches:
            continue  # its schema admits no null already (`channel`, `fallback`)
        del field["anyOf"]
        not_null = [branch for branch in branches if branch != {"type": "null"}]
        assert isinstance(not_null[0], dict)
        field.update(not_null[0])


def _snooze_or_edit(schema: JsonDict) -> None:
    """The schema of what `changes.check_patch` accepts: an edit of one or more fields, of
    which `NOT_NULL` may not be null, or (the older form of `SnoozeIn`) exactly one of
    `snooze` and `snooze_until` alone. (The model itself allows all of them, so that
    FastAPI's validation answers first and `check_patch` then names each field at fault.)"""
    _not_null(schema, (*SNOOZE_FIELDS, *NOT_NULL))
    # A snooze field is alone in its body; any body has a field. (A `oneOf` of the three
    # shapes says the same, but openapi-python-client then types the body as `Any`.)
    schema["minProperties"] = 1
    schema["dependentSchemas"] = {name: {"maxProperties": 1} for name in sorted(SNOOZE_FIELDS)}


def _one_snooze(schema: JsonDict) -> None:
    """The schema of what `changes.check_snooze` accepts: one snooze field, not null."""
    _not_null(schema, sorted(SNOOZE_FIELDS))
    schema["minProperties"] = schema["maxProperties"] = 1


_OLDER_SNOOZE = "The older form of `POST /v1/reminders/{id}/snooze`, alone in the body: "


class SnoozeIn(_Request):
    """When a reminder rings again: `snooze` or `snooze_until`, one of them."""

    model_config = ConfigDict(json_schema_extra=_one_snooze)

    snooze: Duration | None = Field(
        default=None,
        description="How long from now (from its due time, for a one-off still to ring): "
        "`10m`, `1h30m`; 1 second to 366 days.",
    )
    snooze_until: At | None = Field(
        default=None,
        description="When: a local wall time in the reminder's zone, an instant, or a "
        "phrase read there (`tomorrow 9am`).",
    )


class ReminderPatch(_Routed):
    """An edit (any fields; it needs `If-Match`). `snooze` or `snooze_until` alone is the
    older form of a snooze (`SnoozeIn`), still accepted; not with an edit."""

    model_config = ConfigDict(json_schema_extra=_snooze_or_edit)
    route_optional: ClassVar[bool] = True

    snooze: Duration | None = Field(
        default=None,
        description=_OLDER_SNOOZE + "how long to snooze, `10m`.",
        json_schema_extra={"deprecated": True},
    )
    snooze_until: At | None = Field(
        default=None,
        description=_OLDER_SNOOZE + "when to ring again.",
        json_schema_extra={"deprecated": True},
    )
    text: Annotated[Text, AfterValidator(_no_nul)] | None = None
    channel: ChannelIn = None
    fallback: FallbackIn = None
    zone: Zone | None = None
    at: At | None = None
    repeat: Repeat | None = None
    when: When | None = None
    on: PlaceTriggerIn | None = Field(
        default=None, description="A place reminder's new trigger (it replaces the old one)."
    )
    freshness: Duration | None = None
    metadata: Metadata = None
    priority: Priority | None = Field(default=None, description=_PRIORITY)
    ignore_quiet_hours: StrictBool | None = Field(default=None, description=_IGNORE_QUIET_HOURS)
    alerts: Alerts | None = None
    until_done: Duration | None = Field(default=None, description=_UNTIL_DONE, examples=["5m"])
    until_done_max: int | None = Field(default=None, ge=1, le=100, description=_UNTIL_DONE_MAX)
    assignee: Owner | None = Field(
        default=None,
        description="A list's reminder: the one member it rings (on the list); null: every "
        "member who joined.",
    )

    def as_snooze(self) -> SnoozeIn:
        """The snooze of a body in the older form (after `changes.check_patch`)."""
        return SnoozeIn.model_validate(
            self.model_dump(include=set(SNOOZE_FIELDS), exclude_unset=True)
        )


class OccurrencesIn(_Request):
    """A schedule to preview without saving it: `at`, `repeat` or both, `when`, or `say`
    (a one-box sentence: the answer says which words it read as the text and the time)."""

    model_config = ConfigDict(json_schema_extra=_AT_OR_REPEAT)

    zone: Zone
    at: At | None = None
    repeat: Repeat | None = None
    when: When | None = None
    say: Say | None = None
    count: int = Field(default=10, ge=1, le=100)


# Every kind's own fields, with the types the validators take (`validate_contact`): so that a
# client, and schemathesis in the tests, know them. What JSON Schema cannot say (a token's
# length, an E.164 number, a URL a webhook may reach) each kind's validator answers with a 422
# naming the field; its schema here is no stricter than that validator, so a body the schema
# refuses is refused by the server too.
_STRING: JsonDict = {"type": "string", "maxLength": 4096}
_CONTACT_FIELDS: dict[str, JsonValue] = {
    "token": {**_STRING, "description": "apns: hex digits; fcm: the registration token."},
    "environment": {**_STRING, "description": "apns: `production` (default) or `sandbox`."},
    "bundle_id": {**_STRING, "description": "apns: the app's bundle id (the APNs topic)."},
    "subscription": {
        "type": "object",
        "description": "webpush: the browser's `PushSubscription.toJSON()`.",
        "properties": {
            "endpoint": _STRING,
            "keys": {"type": "object", "properties": {"p256dh": _STRING, "auth": _STRING}},
        },
    },
    "address": {**_STRING, "description": "email: an address, like ada@example.com."},
    "number": {**_STRING, "description": "sms: E.164, like +14155550100."},
    "url": {**_STRING, "description": "webhook: an http(s) URL; apprise: an Apprise URL."},
}


def _contact_kinds(schema: JsonDict) -> None:
    """Only the channels that ring contacts are kinds of contact (`inapp` and `log` ring
    none: `validate_contact` refuses them); each kind's own fields beside them."""
    properties = schema["properties"]
    assert isinstance(properties, dict)
    kinds: list[JsonValue] = [kind.value for kind in sorted(VALIDATORS)]
    properties["kind"] = {"type": "string", "enum": kinds, "examples": ["email"]}
    properties.update(_CONTACT_FIELDS)


def _contact_fields(schema: JsonDict) -> None:
    """A change takes the same fields as its kind's create (`_contact_kinds`)."""
    properties = schema["properties"]
    assert isinstance(properties, dict)
    properties.update(_CONTACT_FIELDS)


class ContactIn(BaseModel):
    """A place an owner's rings go. Besides `kind` and `label`, the kind's own fields:
    `token` and `environment` (apns), `token` (fcm), `subscription` (webpush: the browser's
    PushSubscription JSON), `address` (email), `number` (sms, E.164), `url` (apprise,
    webhook)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_contact_kinds)

    kind: Channel = Field(examples=["email"])
    label: Label | None = None


class ContactPatch(BaseModel):
    """A new label, and/or new fields of the contact's kind (which re-enables a contact its
    provider disabled: a new token is a new chance)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_contact_fields)

    label: Label | None = None


# The smallest geofence a place may have: phones report the crossing of a smaller one late or
# not at all (iOS and Android both advise 100 m and more); the largest, a city.
MIN_RADIUS_M = 50
MAX_RADIUS_M = 100_000
PlaceName = Annotated[
    str,
    Field(min_length=1, max_length=100, examples=["Home"]),
    AfterValidator(_not_blank),
    AfterValidator(_no_nul),
]
# Strict: a JSON number, never `true` or "52.5" read as one. (A radius is an integer as JSON
# Schema says, so 150.0 is one; `true` would be 1, below the least.)
Latitude = Annotated[
    float,
    Field(
        strict=True,
        ge=-90,
        le=90,
        allow_inf_nan=False,
        examples=[52.5200],
        description="Degrees north.",
    ),
]
Longitude = Annotated[
    float,
    Field(
        strict=True,
        ge=-180,
        le=180,
        allow_inf_nan=False,
        examples=[13.4050],
        description="Degrees east.",
    ),
]
RadiusM = Annotated[
    int,
    Field(
        ge=MIN_RADIUS_M,
        le=MAX_RADIUS_M,
        examples=[150],
        description=f"The geofence's radius in metres, {MIN_RADIUS_M} to {MAX_RADIUS_M:,}.",
    ),
]


class PlaceIn(_Request):
    """A place of the owner's: a name, and a circle on the earth (WGS 84 degrees, as phones
    report them) that the owner's device watches."""

    name: PlaceName
    latitude: Latitude
    longitude: Longitude
    radius_m: RadiusM = 150


class PlacePatch(_Request):
    """A new name, centre or radius; the fields not given stay as they are, and none may be
    null (`PlaceService.change` names each that is)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=lambda schema: _not_null(
            schema, ("name", "latitude", "longitude", "radius_m")
        ),
    )

    name: PlaceName | None = None
    latitude: Latitude | None = None
    longitude: Longitude | None = None
    radius_m: RadiusM | None = None


ListName = Annotated[
    str,
    Field(min_length=1, max_length=100, examples=["Household"]),
    AfterValidator(_not_blank),
    AfterValidator(_no_nul),
]


class ListIn(_Request):
    """A shared list to make. With an owner token its first owner is the token's owner; with
    an API key `owner` names him (required), and the list is the app's."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"name": "Household", "owner": "ana"}]}
    )

    name: ListName
    owner: Owner | None = Field(
        default=None, description="Its first member, with the role `owner`; with an API key."
    )


class ListPatch(_Request):
    """A new name."""

    name: ListName


class MemberIn(_Request):
    """A member's role: `viewer` reads the list's reminders, `editor` also saves, edits,
    snoozes and cancels them, `owner` also manages the members."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"role": "editor"}]})

    role: Role


class QuietHoursIn(_Request):
    """Quiet hours: a span of the owner's local day, `start` included and `end` excluded,
    across midnight when `end` comes first. Bulk rings due inside wait until it ends."""

    start: ClockTimeText = Field(description="HH:MM on the 24-hour clock, local time.")
    end: ClockTimeText = Field(
        description="HH:MM on the 24-hour clock, local time; before `start`: the next day.",
        examples=["07:00"],
    )
    zone: Zone


class CrossingIn(_Request):
    """A crossing of a place's geofence, as the owner's device saw it."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"event": "arrive", "at": "2026-10-21T16:04:05Z"}]},
    )

    event: PlaceEvent = Field(description="`arrive` or `leave`.")
    at: AwareDatetime = Field(
        description="When the device saw it, with its offset: a crossing more than 15 minutes "
        "old or 5 minutes ahead of the server's clock is refused. Two reports of one "
        "crossing ring once.",
        examples=["2026-10-21T16:04:05Z"],
    )


# -- answers (documentation: handlers build the JSON themselves) ------------------------------


class PlaceOut(BaseModel):
    id: str
    owner: str
    name: str
    latitude: float
    longitude: float
    radius_m: int
    source: str | None = Field(
        description="The app whose key saved it; null: the owner saved it himself."
    )
    created_at: Instant
    updated_at: Instant
    distance_m: float | None = Field(
        default=None,
        description="In a list read with `near`: metres from that point to the place's edge "
        "(0 inside it), along the earth's surface.",
    )


class PlaceListOut(BaseModel):
    places: list[PlaceOut]
    next_cursor: str | None = Field(description="Null with `near`: the nearest come first.")


class PlaceRingOut(BaseModel):
    reminder: str
    firing: str = Field(description="The ring's delivery identity: `<reminder>.<epoch second>`.")


class PlacePassOut(BaseModel):
    reminder: str
    reason: str = Field(examples=["outside its window 17:00-23:00 in Europe/Berlin"])


class CrossingOut(BaseModel):
    place: str
    event: PlaceEvent
    at: Instant
    rang: list[PlaceRingOut] = Field(
        description="The reminders this crossing rang, each handed to delivery as a firing."
    )
    passed: list[PlacePassOut] = Field(
        description="The place's reminders of this event it did not ring, and why."
    )


class QuietHoursOut(BaseModel):
    owner: str
    source: str | None = Field(
        description="The app whose key saved them (they hold its reminders' rings); null: the "
        "owner's own (they hold every ring of his)."
    )
    start: str = Field(examples=["22:00"])
    end: str = Field(examples=["07:00"])
    zone: str = Field(examples=["Europe/Berlin"])
    quiet_until: Instant | None = Field(
        description="When the span that holds now ends; null when now is outside it."
    )
    updated_at: Instant


class QuietHoursListOut(BaseModel):
    quiet_hours: list[QuietHoursOut]


class ContactOut(BaseModel):
    id: str
    owner: str
    kind: Channel
    label: str | None
    address: dict[str, str] = Field(description="The kind's fields, as saved.")
    source: str | None = Field(
        description="The app whose key saved it (its rings only, and the owner's, go here); "
        "null: the owner saved it himself (every ring of his may go here)."
    )
    disabled_reason: str | None = Field(
        description="Why the provider's answer disabled it (a token it called gone), or null."
    )
    disabled_at: Instant | None
    created_at: Instant
    updated_at: Instant
    secret: str | None = Field(
        default=None,
        description="A webhook contact's signing secret: in the answer to its creation only.",
    )


class ContactListOut(BaseModel):
    contacts: list[ContactOut]
    next_cursor: str | None


class ChannelsOut(BaseModel):
    channels: list[Channel] = Field(
        description="The channels configured here, in a fixed order: a reminder on another "
        "is refused (422)."
    )


class OwnerChannelOut(BaseModel):
    channel: Channel
    configured: bool = Field(description="This server rings it (else a create is refused).")
    ready: bool = Field(
        description="A ring on it would reach somewhere now: a contact of its kind the "
        "caller's app may ring, a webhook URL, or a channel that needs none (`inapp`, `log`)."
    )
    reason: str | None = Field(description="Why not, when not ready; null when ready.")


class OwnerChannelsOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "owner": "ana",
                    "channels": [
                        {
                            "channel": "webhook",
                            "configured": True,
                            "ready": False,
                            "reason": "there is no webhook URL (`tocsin keys create "
                            "--webhook-url`, or TOCSIN_WEBHOOK_URL for the server) and ana has "
                            "no webhook contact: the ring would find no-destination",
                        },
                        {"channel": "email", "configured": True, "ready": True, "reason": None},
                        {"channel": "inapp", "configured": True, "ready": True, "reason": None},
                    ],
                }
            ]
        }
    )

    owner: str
    channels: list[OwnerChannelOut] = Field(description="Every channel, in a fixed order.")


class FeedTicketOut(BaseModel):
    ticket: str = Field(description="Opens the owner's feed: `GET …/feed?ticket=…`.")
    expires: Instant = Field(description="When it stops opening it (UTC); an open feed stays open.")


class LastFiringOut(BaseModel):
    id: str
    due: Instant
    state: FiringState


RingChannels = Channel | list[Channel] | None


class PlaceTriggerOut(BaseModel):
    place: str = Field(examples=["06h2t0k5f07g6e1x9q3d"])
    event: PlaceEvent
    after: str | None = Field(examples=["17:00"])
    before: str | None = Field(examples=[None])
    once: Once | None = Field(examples=["day"])


class ReminderOut(BaseModel):
    id: str
    owner: str
    text: str
    channel: RingChannels = Field(
        description="Its channel, or the channels rung all at once; null for a `fallback`."
    )
    fallback: list[Channel] | None = Field(
        default=None, description="The fallback chain, in order (instead of `channel`)."
    )
    zone: str
    at: str | None
    repeat: str | None
    rule: str | None
    status: ReminderStatus
    next: Instant | None = Field(description="The next ring, UTC: `2026-10-26T13:00:00Z`.")
    next_local: Instant | None = Field(description="The next ring in `zone`, with its offset.")
    freshness: str
    priority: Priority
    ignore_quiet_hours: bool = Field(description=_IGNORE_QUIET_HOURS)
    alerts: list[str] = Field(description="Its early alerts' leads, earliest first: `1d`, `15m`.")
    until_done: str | None = Field(description=_UNTIL_DONE)
    until_done_max: int | None = Field(description=_UNTIL_DONE_MAX)
    next_occurrence: Instant | None = Field(
        description="The occurrence the next ring is for: `next` itself, or, when the next "
        "ring is an early alert, the occurrence it comes before."
    )
    metadata: dict[str, Any] | None
    source: str | None
    created_at: Instant
    updated_at: Instant
    last_firing: LastFiringOut | None = None
    snoozed_from: str | None = None
    list_id: str | None = Field(
        default=None,
        alias="list",
        description="A shared list's reminder: the list's id (absent otherwise).",
        examples=["01jd8x3k2m9q4r7s5t6v"],
    )
    assignee: str | None = Field(
        default=None,
        description="A list's reminder: the one member it rings; null: every member who joined.",
        examples=["ben"],
    )
    on: PlaceTriggerOut | None = Field(
        default=None,
        description="Only on a reminder that rings at a place: what rings it. Its `at`, "
        "`next` and `next_local` are null: it waits, `pending`, for its owner's device to "
        "report the crossing.",
    )
    warnings: list[dict[str, str]] | None = Field(
        default=None,
        description="On a create or an edit: each channel that cannot deliver a ring now "
        "(`field`, `message`): the owner has no contact of its kind the app may ring, no "
        "webhook URL, a channel no longer configured. The reminder is saved all the same.",
    )


class MemberOut(BaseModel):
    member: str = Field(examples=["ben"])
    role: Role = Field(examples=["editor"])
    state: Literal["invited", "joined"] = Field(
        description="`invited` until he accepts: an invitation rings nobody.", examples=["joined"]
    )
    invited_at: Instant = Field(examples=["2026-12-07T09:01:00Z"])
    joined_at: Instant | None = Field(examples=["2026-12-07T09:05:00Z"])


class ListOut(BaseModel):
    id: str = Field(examples=["01jd8x3k2m9q4r7s5t6v"])
    name: str = Field(examples=["Household"])
    owner: str = Field(
        description="The owner its reminders are saved under (`list#<id>`).",
        examples=["list#01jd8x3k2m9q4r7s5t6v"],
    )
    source: str | None = Field(
        description="The app whose key made it; null: an owner did.", examples=[None]
    )
    members: list[MemberOut]
    created_at: Instant = Field(examples=["2026-12-07T09:00:00Z"])
    updated_at: Instant = Field(examples=["2026-12-07T09:00:00Z"])


class ListsOut(BaseModel):
    lists: list[ListOut]


class ReminderListOut(BaseModel):
    reminders: list[ReminderOut]
    next_cursor: str | None


class FieldErrorOut(BaseModel):
    field: str = Field(description="A dotted path: `zone`, `items.3.at`, `Idempotency-Key`.")
    message: str


class ConflictFiringOut(BaseModel):
    id: str
    state: FiringState


class ProblemOut(BaseModel):
    """An RFC 9457 problem: `type` is `urn:tocsin:problem:<slug>`, `detail` says what
    happened. Some problems carry more members (listed below)."""

    type: str = Field(examples=["urn:tocsin:problem:invalid-input"])
    title: str
    status: int
    detail: str
    errors: list[FieldErrorOut] | None = Field(
        default=None, description="The fields at fault (400, 413, 415, 422)."
    )
    reminder_status: ReminderStatus | None = Field(
        default=None, description="A cancel that could not be (409): the reminder's status."
    )
    last_firing: ConflictFiringOut | None = Field(
        default=None, description="A cancel that could not be (409): its latest ring."
    )
    snoozed_by: str | None = Field(
        default=None, description="A ring snoozed already (409): the reminder it became."
    )


class BatchItemOut(BaseModel):
    """One item's result: `created` with the new reminder's `id`, `next` ring and `etag`, or
    `invalid` with the `problem`."""

    index: int
    status: Literal["created", "invalid"]
    id: str | None = Field(default=None, description="The saved reminder's id (`created`).")
    next: Instant | None = Field(default=None, description="Its first ring, UTC (`created`).")
    etag: str | None = Field(
        default=None,
        description="Its `ETag` as saved (`created`), for an edit's `If-Match` without a read.",
        examples=['"1"'],
    )
    problem: ProblemOut | None = None


class BatchOut(BaseModel):
    created: int
    invalid: int
    items: list[BatchItemOut]


class OccurrenceOut(BaseModel):
    at: Instant
    local: Instant


class OccurrencesOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "text": "call mom",
                    "when": "tomorrow at 18:00",
                    "occurrences": [
                        {"at": "2026-10-22T16:00:00Z", "local": "2026-10-22T18:00:00+02:00"}
                    ],
                }
            ]
        }
    )

    text: str | None = Field(
        default=None, description="For `say`: the words it read as the reminder's text."
    )
    when: str | None = Field(default=None, description="For `say`: the words it read as the time.")
    occurrences: list[OccurrenceOut]


class AttemptOut(BaseModel):
    number: int
    at: Instant
    channel: Channel
    outcome: Outcome
    error: str | None
    provider_id: str | None
    destination: str | None = Field(
        description="Where it went: a contact's id, `app:<name>` (the app's webhook endpoint), "
        "`default` (TOCSIN_WEBHOOK_URL) or `log`; null when its channel had no destination "
        "(a ring on several channels records that, and moves on)."
    )
    step: int | None = Field(
        default=None, description="On a `fallback` ring: the step of the chain (1, 2, …)."
    )
    reason: str | None = Field(
        default=None,
        description="On a `fallback` ring's step after the first: why it was tried "
        "(`step 1 (apns) failed for good`).",
    )


class FiringOut(BaseModel):
    id: str
    state: FiringState
    due: Instant
    deadline: Instant
    channel: RingChannels = Field(description="As the reminder's, when it rang.")
    fallback: list[Channel] | None = None
    attempts: int
    next_attempt_at: Instant | None
    sent_at: Instant | None
    provider_id: str | None
    last_error: str | None
    snoozed_by: str | None
    done_at: Instant | None = Field(
        description="When its owner marked it done (`POST /v1/firings/{id}/done`); null until."
    )
    created_at: Instant
    history: list[AttemptOut]


class FiringsOut(BaseModel):
    firings: list[FiringOut]
