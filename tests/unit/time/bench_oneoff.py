"""Measures reading one-off phrases: `python -m tests.unit.time.bench_oneoff`."""

from __future__ import annotations

import sys
import timeit
from datetime import UTC, datetime

from tocsin.errors import InvalidInput
from tocsin.time import load_zone, read_when
from tocsin.time.oneoff import resolve_one_off

NOW = datetime(2026, 3, 28, 18, 30, tzinfo=UTC)  # 19:30 in Paris, the eve of spring forward
PHRASES = (
    "18:00",
    "tomorrow 9am",
    "in 10 minutes",
    "next Friday at 17:00",
    "Dec 24 at 18:00",
    "blursday at noonish",
)


def measure(text: str, *, when: bool, calls: int = 5000) -> float:
    """Mean µs per reading: the one-off grammar alone, or `when` (one-off, else repeat)."""
    zone = load_zone("Europe/Paris")

    def run() -> None:
        for _ in range(calls):
            try:
                if when:
                    read_when(text, zone="Europe/Paris", now=NOW)
                else:
                    resolve_one_off(text, zone=zone, now=NOW, field="at")
            except InvalidInput:
                pass

    return min(timeit.repeat(run, number=1, repeat=3)) / calls * 1e6


def main() -> None:
    out = sys.stdout
    out.write(f"{'phrase':26} {'one-off µs':>10} {'when µs':>8}\n")
    for text in PHRASES:
        out.write(f"{text:26} {measure(text, when=False):10.1f} {measure(text, when=True):8.1f}\n")


if __name__ == "__main__":
    main()
