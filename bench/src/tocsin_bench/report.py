"""Reports: a human table on stdout, or JSON for machines."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import orjson

from tocsin_bench.costs import describe

_HIDDEN = {"receiver.arrivals", "logs"}
# Metrics shown on one line of their own, not a line per value.
_ONE_LINE: dict[str, Callable[[Mapping[str, Any]], str]] = {"cost_per_ring": describe}


def to_json(results: Sequence[Mapping[str, Any]]) -> str:
    payload: Any = results[0] if len(results) == 1 else list(results)
    return orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode()


def to_table(results: Sequence[Mapping[str, Any]]) -> str:
    """Each result as a titled two-column table of its flattened metrics."""
    blocks = []
    for result in results:
        params = ", ".join(f"{k}={v}" for k, v in result.get("params", {}).items())
        runs = result.get("runs")
        title = f"{result['scenario']} ({params})" + (f" — median of {runs} runs" if runs else "")
        rows = list(_rows(result.get("metrics", {})))
        width = max((len(key) for key, _ in rows), default=0)
        lines = [title, "-" * len(title)]
        lines += [f"  {key.ljust(width)}  {value}" for key, value in rows]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _rows(metrics: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for key, value in metrics.items():
        if key in _ONE_LINE and isinstance(value, Mapping):
            yield key, _ONE_LINE[key](value)
            continue
        for name, leaf in flatten({key: value}):
            if name not in _HIDDEN:
                yield name, _format(leaf)


def flatten(values: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from flatten(value, f"{name}.")
        else:
            yield name, value


def _format(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3f}"
    if isinstance(value, list):
        return ", ".join(_format(v) for v in value)
    return str(value)
