"""Helpers for the tests of channels' `validate_contact`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from tocsin.errors import InvalidInput

Validate = Callable[[Mapping[str, Any]], dict[str, str]]


def refusal(validate: Validate, body: Any) -> InvalidInput:
    """The error `validate` refuses `body` with (the test fails when it accepts it)."""
    with pytest.raises(InvalidInput) as caught:
        validate(body)
    return caught.value


def stored_or_field(validate: Validate, body: Any) -> dict[str, str] | InvalidInput:
    """What `validate` stored, or the error it refused `body` with."""
    try:
        return validate(body)
    except InvalidInput as error:
        return error
