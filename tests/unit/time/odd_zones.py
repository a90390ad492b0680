"""Zones whose offsets and history catch local-clock mistakes, for property tests of what is
read on the local clock (quiet hours, alerts, place windows)."""

from __future__ import annotations

ODD_ZONES = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",  # a 30-minute daylight-saving change
    "Asia/Kolkata",  # +05:30
    "Asia/Kathmandu",  # +05:45
    "America/St_Johns",  # -03:30, daylight saving
    "Pacific/Apia",  # skipped 2011-12-30 whole
    "UTC",
]
