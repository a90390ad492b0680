"""Numbers the benchmarks report: percentiles of lateness, rates, medians over runs."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

PERCENTILES = (50, 90, 99)


def percentile(ordered: Sequence[float], pct: float) -> float:
    """The nearest-rank percentile of an ascending sequence (0.0 when empty)."""
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def spread(values: Sequence[float]) -> dict[str, float]:
    """p50/p90/p99/max of `values` (seconds or milliseconds, as given)."""
    ordered = sorted(values)
    summary = {f"p{pct}": percentile(ordered, pct) for pct in PERCENTILES}
    summary["max"] = ordered[-1] if ordered else 0.0
    return summary


def rate(count: float, seconds: float) -> float:
    """`count` per second over `seconds` (0.0 when no time passed)."""
    return count / seconds if seconds > 0 else 0.0


def median_of(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The median of each numeric value across runs (nested mappings too); other values are
    taken from the first run."""
    first = runs[0]
    merged: dict[str, Any] = {}
    for key, value in first.items():
        values = [run.get(key) for run in runs]
        if isinstance(value, Mapping):
            merged[key] = median_of([v for v in values if isinstance(v, Mapping)])
        elif isinstance(value, int | float) and not isinstance(value, bool):
            numbers = [v for v in values if isinstance(v, int | float)]
            middle = statistics.median(numbers)
            merged[key] = int(middle) if all(isinstance(v, int) for v in numbers) else middle
        else:
            merged[key] = value
    return merged
