"""TOCSIN_RETAIN_FIRINGS: a duration from 1 day to 10 years, 30 days when unset; and
TOCSIN_RETENTION_LEASE_SECONDS, the retention chore's lease."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from tocsin.scheduler.retention import RetentionTuning
from tocsin.settings import Settings


def test_retention_is_thirty_days_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOCSIN_RETAIN_FIRINGS", raising=False)
    assert Settings().retain_firings == timedelta(days=30)
    monkeypatch.setenv("TOCSIN_RETAIN_FIRINGS", "12w")
    assert Settings().retain_firings == timedelta(weeks=12)
    monkeypatch.setenv("TOCSIN_RETAIN_FIRINGS", "P90D")
    assert Settings().retain_firings == timedelta(days=90)


@pytest.mark.parametrize(
    ("value", "says"),
    [("6h", "it must be from 1 day"), ("forever", "is not a duration"), ("11000d", "3650 days")],
)
def test_a_bad_retention_is_refused_saying_why(
    monkeypatch: pytest.MonkeyPatch, value: str, says: str
) -> None:
    monkeypatch.setenv("TOCSIN_RETAIN_FIRINGS", value)
    with pytest.raises(ValidationError, match="retain_firings") as raised:
        Settings()
    assert says in str(raised.value)


def test_the_chore_lease_is_a_minute_unless_set_and_passes_come_every_half(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TOCSIN_RETENTION_LEASE_SECONDS", raising=False)
    assert Settings().retention_lease_seconds == 60
    monkeypatch.setenv("TOCSIN_RETENTION_LEASE_SECONDS", "0")
    with pytest.raises(ValidationError, match="retention_lease_seconds"):
        Settings()
    tuning = RetentionTuning(lease=timedelta(seconds=4))
    assert tuning.idle == timedelta(seconds=2)  # the holder renews before its lease lapses
