"""The sms contact's fields as the API takes them: an E.164 number."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tocsin.channels.sms import E164, validate_contact
from tocsin.errors import InvalidInput


@pytest.mark.parametrize(
    ("number", "stored"),
    [
        ("+14155550100", "+14155550100"),
        (" +1 (415) 555-0100 ", "+14155550100"),
        ("+14155550100\n", "+14155550100"),
        ("+44 20 7946 0958", "+442079460958"),
        ("+33.1.23.45.67.89", "+33123456789"),
        ("+49301234", "+49301234"),  # 8 digits: the shortest
        ("+123456789012345", "+123456789012345"),  # 15: the longest E.164 allows
    ],
)
def test_numbers_are_stored_in_e164(number: str, stored: str) -> None:
    assert validate_contact({"number": number}) == {"number": stored}


@pytest.mark.parametrize(
    "number",
    [
        "",
        "  ",
        "14155550100",  # no country code marker
        "0014155550100",
        "+04155550100",  # a country code never starts with 0
        "+1234567",  # 7 digits
        "+1234567890123456",  # 16 digits
        "+1 415 555 01OO",  # letters O for zeros
        "+１４１５５５５０１００",  # fullwidth digits
        "+١٤١٥٥٥٥٠١٠٠",  # Arabic-Indic digits
        "+1/415/5550100",
        "+1 415 555 0100 ext 2",
        "++14155550100",
        "tel:+14155550100",
    ],
)
def test_bad_numbers_are_refused_naming_the_field(number: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate_contact({"number": number})
    assert refused.value.field == "number"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({}, "number"),
        ({"number": None}, "number"),
        ({"number": 14155550100}, "number"),
        ({"number": "+14155550100", "address": "ada@example.com"}, "address"),
    ],
)
def test_missing_wrong_and_unknown_fields(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate_contact(fields)
    assert refused.value.field == field


@given(st.from_regex(r"\+[1-9][0-9]{7,14}", fullmatch=True))
def test_every_e164_number_is_kept_as_given(number: str) -> None:
    assert validate_contact({"number": number}) == {"number": number}


@given(st.text(max_size=24))
def test_any_text_is_refused_or_stored_as_e164(text: str) -> None:
    stored = _validated(text)
    if isinstance(stored, str):
        assert stored == "number"  # refused, naming the field
        return
    assert E164.fullmatch(stored["number"])
    assert stored["number"].isascii()
    assert validate_contact(stored) == stored


def _validated(number: str) -> dict[str, str] | str:
    """The stored fields, or the field an InvalidInput named."""
    try:
        return validate_contact({"number": number})
    except InvalidInput as refused:
        return refused.field
