"""A reminder's channels as the API takes and shows them: `channel` (one name, or a list that
rings all at once) or `fallback` (a chain, tried in order), exactly one of the two.

Exactly one, rather than `channel` as the chain's first step: the two mean different things
(every channel now, or the next only when the one before failed for good), and a body with
both would leave a reader to guess whether a list in `channel` is one step or several. The
chain names all its steps in one list, as the issue's `"fallback": ["apns", "sms"]` does.

`inapp` rings only on its own: a ring waits in the feed until a page is open or its deadline
passes, so it never fails for good before the deadline (a chain could not move past it) and
it is settled by the feed, not by delivery's round (it cannot share a ring with others).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pydantic.config import JsonDict

from tocsin.api.problems import FieldError, invalid
from tocsin.channels import enabled_by
from tocsin.domain import ROUTE_MAX, Channel, Route, one

ROUTE_FIELDS = frozenset({"channel", "fallback"})
ALONE = frozenset({Channel.INAPP})  # rings only as a reminder's one channel
_NAMES: dict[str, Channel] = {channel.value: channel for channel in Channel}
_IN_LISTS: list[Any] = [c.value for c in Channel if c not in ALONE]


def _list_schema(minimum: int, description: str) -> JsonDict:
    return {
        "type": "array",
        "items": {"type": "string", "enum": _IN_LISTS},
        "minItems": minimum,
        "maxItems": ROUTE_MAX,
        "uniqueItems": True,
        "description": description,
    }


CHANNEL_SCHEMA: JsonDict = {
    "anyOf": [
        {"$ref": "#/components/schemas/Channel"},  # the enum every answer refers to
        _list_schema(1, "Several channels, all rung at once under the ring's one identity."),
    ],
    "description": "Where rings go: a channel, or a list of channels rung all at once. "
    "Give `channel` or `fallback`, not both.",
}
FALLBACK_SCHEMA: JsonDict = _list_schema(
    2,
    "A fallback chain: each channel is tried only when every destination of the one before "
    "failed for good (or it had none), within the ring's freshness. Instead of `channel`.",
)


def parse_route(channel: Any, fallback: Any, *, given: set[str]) -> tuple[Route, list[FieldError]]:
    """The route a body's `channel` and `fallback` name (`given`: the fields present in the
    body), and what is wrong with them, each item of a list named by its index
    (`channel[1]`). The route is only meaningful when there is no error."""
    errors: list[FieldError] = []
    present = given & ROUTE_FIELDS
    route = Route(())
    if len(present) != 1:
        message = "give `channel` or `fallback`, not both" if present else "required"
        errors.append(FieldError("channel", message))
    elif "fallback" in present:
        route = Route(_names("fallback", fallback, 2, errors.append), fallback=True)
    elif isinstance(channel, str):
        route = Route(_names("channel", [channel], 1, errors.append, single=True))
    else:
        route = Route(_names("channel", channel, 1, errors.append))
    if route.single and not route.fallback:
        route = one(route.channels[0])
    return route, errors


def _names(
    field: str,
    value: Any,
    minimum: int,
    error: Callable[[FieldError], None],
    *,
    single: bool = False,
) -> tuple[Channel, ...]:
    """The channels of a list (or of a single name), reporting each bad item."""
    if value is None:
        error(FieldError(field, "may not be null"))
        return ()
    if not isinstance(value, list):
        error(FieldError(field, "must be a channel name or a list of them"))
        return ()
    if not minimum <= len(value) <= ROUTE_MAX:
        error(FieldError(field, f"must list {minimum} to {ROUTE_MAX} channels"))
        return ()
    found: list[Channel] = []
    for index, name in enumerate(value):
        where = field if single else f"{field}[{index}]"
        channel = _NAMES.get(name) if isinstance(name, str) else None
        if channel is None:
            error(FieldError(where, f"must be one of {', '.join(_NAMES)}"))
        elif channel in found:
            error(FieldError(where, f"{channel} is listed twice"))
        elif channel in ALONE and not single:
            error(FieldError(where, f"{channel} rings only on its own, not in a list"))
        else:
            found.append(channel)
    return tuple(found)


def check_configured(route: Route, configured: frozenset[Channel]) -> None:
    """422 naming each channel of `route` this server has not configured, and how to."""
    errors = [
        FieldError(
            field,
            f"the {channel} channel is not configured on this server "
            f"(it needs {enabled_by(channel)})",
        )
        for field, channel in fields_of(route)
        if channel not in configured
    ]
    if errors:
        raise invalid(errors)


def fields_of(route: Route) -> Iterator[tuple[str, Channel]]:
    """Each channel of a route with the field that names it in a body."""
    single = route.single
    if single is not None and not route.fallback:
        yield "channel", single
        return
    field = "fallback" if route.fallback else "channel"
    for index, channel in enumerate(route.channels):
        yield f"{field}[{index}]", channel


def shown(route: Route) -> dict[str, Any]:
    """The route's fields as a reminder or a firing shows them: `channel` a name or a list,
    or null with `fallback` the chain."""
    if route.fallback:
        return {"channel": None, "fallback": [c.value for c in route.channels]}
    single = route.single
    return {"channel": single.value if single else [c.value for c in route.channels]}
