"""Zones: IANA names from the shipped tzdata, clear errors, and the offset facts we rely on."""

from __future__ import annotations

import itertools
import struct
from datetime import UTC, datetime, timedelta
from importlib import resources

import pytest

from tocsin.errors import InvalidInput
from tocsin.time import load_zone, zone_names
from tocsin.time.zones import gap_before


@pytest.mark.parametrize(
    "name",
    ["America/New_York", "Europe/Dublin", "Asia/Kathmandu", "UTC", "Etc/UTC", "US/Eastern"],
)
def test_known_names_load(name: str) -> None:
    zone = load_zone(name)
    assert str(zone) == name
    assert load_zone(name) is zone


def test_zone_comes_from_tzdata_not_the_host() -> None:
    # Read from tzdata's own files: same offsets on every machine.
    moment = datetime(2026, 7, 1, 12, tzinfo=UTC)
    assert moment.astimezone(load_zone("Asia/Kathmandu")).utcoffset() == timedelta(
        hours=5, minutes=45
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("America/new_york", "did you mean 'America/New_York'"),
        ("Europe/Londn", "did you mean 'Europe/London'"),
        ("Kolkata", "did you mean 'Asia/Kolkata'"),
        ("Mars/Olympus_Mons", "'Mars/Olympus_Mons' is not a known IANA time zone name"),
        ("/etc/localtime", "'/etc/localtime' is not a known"),
        ("../../etc/passwd", "is not a known"),
        ("UTC+2", "'UTC+2' is an offset or abbreviation"),
        ("+02:00", "is an offset"),
        ("EST5EDT", "'EST5EDT' is an offset or abbreviation"),
        ("Etc/GMT+2", "is an offset"),
        ("EST", "is an offset or abbreviation"),
        ("", "give an IANA time zone name"),
        ("   ", "give an IANA time zone name"),
    ],
)
def test_bad_names_are_invalid_zone(name: str, expected: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        load_zone(name)
    assert caught.value.field == "zone"
    assert expected in caught.value.message


def test_very_long_name_is_shortened_in_the_message() -> None:
    with pytest.raises(InvalidInput) as caught:
        load_zone("x" * 5000)
    assert len(caught.value.message) < 300


def test_zone_names_exclude_offsets_and_keep_places() -> None:
    names = zone_names()
    assert "Europe/Paris" in names
    assert "Pacific/Apia" in names
    assert not any(ch.isdigit() for name in names for ch in name)
    assert "Factory" not in names


def test_gap_before_sees_spring_forward_only() -> None:
    zone = load_zone("America/New_York")
    after_spring = datetime(2027, 3, 14, 12, tzinfo=UTC)
    assert gap_before(zone, after_spring) == timedelta(hours=1)
    after_fall = datetime(2026, 11, 1, 12, tzinfo=UTC)
    assert gap_before(zone, after_fall) == timedelta(0)
    assert gap_before(zone, datetime(2027, 1, 5, tzinfo=UTC)) == timedelta(0)


def _offset_changes(name: str) -> list[tuple[int, int]]:
    """(UTC second, new offset) for each explicit transition in the zone's TZif file (RFC 8536)."""
    data = resources.files("tzdata.zoneinfo").joinpath(*name.split("/")).read_bytes()
    isut, isstd, leap, count, types, chars = struct.unpack(">6l", data[20:44])
    second = data[44 + count * 5 + types * 6 + chars + leap * 8 + isstd + isut :]
    isut, isstd, leap, count, types, chars = struct.unpack(">6l", second[20:44])
    times = struct.unpack(f">{count}q", second[44 : 44 + 8 * count])
    indexes = second[44 + 8 * count : 44 + 9 * count]
    table = second[44 + 9 * count :]
    offsets = [struct.unpack(">l", table[6 * i : 6 * i + 4])[0] for i in range(types)]
    changes, previous = [], offsets[0]
    for at, index in zip(times, indexes, strict=True):
        if offsets[index] != previous:
            changes.append((at, offsets[index] - previous))
        previous = offsets[index]
    return changes


def test_tzdata_never_changes_an_offset_twice_within_25_hours() -> None:
    """gap_before compares offsets 25 hours apart; that is exact only while this holds."""
    for name in sorted(zone_names()):
        changes = _offset_changes(name)
        for (first, _), (second, _) in itertools.pairwise(changes):
            assert second - first >= 25 * 3600, name
        assert all(jump <= 24 * 3600 for _, jump in changes), name
