"""Routes: how a reminder's channels are stored and read back, and what the API's parser
makes of a body's `channel` and `fallback`."""

from __future__ import annotations

from typing import Any

import pytest

from tocsin.api.routing import fields_of, parse_route, shown
from tocsin.domain import Channel, Route, one
from tocsin.domain import parse_route as stored_route
from tocsin.store import codec

APNS, EMAIL, SMS = Channel.APNS, Channel.EMAIL, Channel.SMS


@pytest.mark.parametrize(
    ("route", "text"),
    [
        (one(EMAIL), "email"),
        (Route((APNS, EMAIL)), "apns,email"),
        (Route((APNS, SMS, EMAIL), fallback=True), "apns>sms>email"),
    ],
)
def test_a_route_is_stored_as_a_few_bytes_of_text_and_read_back(route: Route, text: str) -> None:
    assert route.value == text
    assert stored_route(text) == route
    assert codec.route_of(text) == route
    assert codec.route_of(text) is codec.route_of(text)  # parsed once


def test_steps_are_all_at_once_or_one_per_channel() -> None:
    chain = Route((APNS, SMS), fallback=True)

    assert Route((APNS, SMS)).steps == ((APNS, SMS),)
    assert chain.steps == ((APNS,), (SMS,))
    assert (chain.step_of(APNS), chain.step_of(SMS)) == (1, 2)
    assert (one(SMS).single, chain.single) == (SMS, None)


@pytest.mark.parametrize(
    ("body", "route"),
    [
        ({"channel": "email"}, one(EMAIL)),
        ({"channel": ["email"]}, one(EMAIL)),
        ({"channel": ["apns", "email"]}, Route((APNS, EMAIL))),
        ({"fallback": ["apns", "sms"]}, Route((APNS, SMS), fallback=True)),
        ({"channel": "inapp"}, one(Channel.INAPP)),  # alone, it may
    ],
)
def test_a_body_names_its_route(body: dict[str, Any], route: Route) -> None:
    parsed, errors = parse_route(body.get("channel"), body.get("fallback"), given=set(body))

    assert errors == []
    assert parsed == route
    assert parsed.value == route.value


def test_each_field_of_a_route_is_named_as_a_body_names_it() -> None:
    assert list(fields_of(one(EMAIL))) == [("channel", EMAIL)]
    assert list(fields_of(Route((APNS, EMAIL)))) == [("channel[0]", APNS), ("channel[1]", EMAIL)]
    chain = Route((APNS, SMS), fallback=True)
    assert list(fields_of(chain)) == [("fallback[0]", APNS), ("fallback[1]", SMS)]
    assert shown(chain) == {"channel": None, "fallback": ["apns", "sms"]}
    assert shown(Route((APNS, EMAIL))) == {"channel": ["apns", "email"]}
    assert shown(one(EMAIL)) == {"channel": "email"}
