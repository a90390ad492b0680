"""The contact fields of the push channels (`apns`, `fcm`): what is accepted, how it is
stored, and which field a refusal names."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tocsin.channels import apns, fcm
from tocsin.errors import InvalidInput

HEX = "0123456789abcdefABCDEF"
APNS_TOKEN = "a1" * 32


def refused(validate: Any, fields: dict[str, Any]) -> str:
    """The field a refusal names."""
    with pytest.raises(InvalidInput) as raised:
        validate(fields)
    return raised.value.field


@pytest.mark.parametrize(
    ("fields", "stored"),
    [
        ({"token": APNS_TOKEN}, {"token": APNS_TOKEN, "environment": "production"}),
        ({"token": APNS_TOKEN.upper()}, {"token": APNS_TOKEN, "environment": "production"}),
        (
            {"token": "ff" * 100, "environment": "sandbox"},
            {"token": "ff" * 100, "environment": "sandbox"},
        ),
        (
            {"token": APNS_TOKEN, "environment": "development"},
            {"token": APNS_TOKEN, "environment": "sandbox"},
        ),
        (
            {"token": APNS_TOKEN, "environment": "Production"},
            {"token": APNS_TOKEN, "environment": "production"},
        ),
        (
            {"token": APNS_TOKEN, "bundle_id": "com.example.my-app"},
            {"token": APNS_TOKEN, "environment": "production", "bundle_id": "com.example.my-app"},
        ),
        (
            {"token": APNS_TOKEN, "bundle_id": None},
            {"token": APNS_TOKEN, "environment": "production"},
        ),
    ],
)
def test_apns_contacts_accepted(fields: dict[str, Any], stored: dict[str, str]) -> None:
    assert apns.validate_contact(fields) == stored


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({}, "token"),
        ({"token": ""}, "token"),
        ({"token": "a1" * 31}, "token"),  # 62 digits
        ({"token": "a1" * 101}, "token"),  # 202 digits
        ({"token": "a1" * 32 + "f"}, "token"),  # odd
        ({"token": "g1" * 32}, "token"),
        ({"token": "<" + "a1" * 32 + ">"}, "token"),
        ({"token": 42}, "token"),
        ({"token": APNS_TOKEN, "environment": "staging"}, "environment"),
        ({"token": APNS_TOKEN, "bundle_id": "example"}, "bundle_id"),
        ({"token": APNS_TOKEN, "bundle_id": "com.example.app/x"}, "bundle_id"),
        ({"token": APNS_TOKEN, "bundle_id": "com." + "a" * 160}, "bundle_id"),
        ({"token": APNS_TOKEN, "topic": "com.example.app"}, "topic"),
    ],
)
def test_apns_contacts_refused_name_the_field(fields: dict[str, Any], field: str) -> None:
    assert refused(apns.validate_contact, fields) == field


@given(st.integers(32, 100).flatmap(lambda n: st.text(HEX, min_size=2 * n, max_size=2 * n)))
def test_any_even_run_of_64_to_200_hex_digits_is_an_apns_token(token: str) -> None:
    assert apns.validate_contact({"token": token})["token"] == token.lower()


@given(
    st.text(HEX, min_size=64, max_size=64),
    st.integers(0, 63),
    st.characters(exclude_characters=HEX),
)
def test_anything_but_hex_in_an_apns_token_is_refused(token: str, where: int, other: str) -> None:
    spoiled = token[:where] + other + token[where + 1 :]
    assert refused(apns.validate_contact, {"token": spoiled}) == "token"


FCM_TOKEN = "dM3yG0cLQ0e:APA91bH" + "x_-" * 45


@pytest.mark.parametrize("token", [FCM_TOKEN, "a" * 20, "!" * 4096, "ab:cd/ef+gh=ij~kl.mn"])
def test_fcm_tokens_accepted_as_given(token: str) -> None:
    assert fcm.validate_contact({"token": token}) == {"token": token}


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({}, "token"),
        ({"token": ""}, "token"),
        ({"token": "a" * 19}, "token"),
        ({"token": "a" * 4097}, "token"),
        ({"token": FCM_TOKEN + " "}, "token"),
        ({"token": FCM_TOKEN[:50] + "\n" + FCM_TOKEN[50:]}, "token"),
        ({"token": FCM_TOKEN + "é"}, "token"),
        ({"token": ["a" * 30]}, "token"),
        ({"token": FCM_TOKEN, "environment": "sandbox"}, "environment"),
    ],
)
def test_fcm_contacts_refused_name_the_field(fields: dict[str, Any], field: str) -> None:
    assert refused(fcm.validate_contact, fields) == field


@given(st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=20, max_size=300))
def test_any_printable_ascii_without_spaces_is_an_fcm_token(token: str) -> None:
    assert fcm.validate_contact({"token": token}) == {"token": token}


@given(st.text(min_size=20, max_size=100).filter(lambda t: any(not "!" <= c <= "~" for c in t)))
def test_a_space_control_or_non_ascii_character_makes_an_fcm_token_invalid(token: str) -> None:
    assert refused(fcm.validate_contact, {"token": token}) == "token"
