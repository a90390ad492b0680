"""The report of a chaos run: what each fault cost in lateness (rings due during its
windows against rings due outside every window), and the human text of the whole verdict."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from tocsin_bench.chaos_checks import Records
from tocsin_bench.chaos_plan import Window
from tocsin_bench.report import flatten
from tocsin_bench.stats import spread

NO_FAULT = "no fault"
SEVERAL = "several at once"
WORST = 5  # the latest rings shown per group


def lateness_by_fault(records: Records, windows: Sequence[Window]) -> dict[str, Any]:
    """For the firings due inside one fault's windows only, inside windows of several
    faults at once, and outside all of them: how many, p50/p90/p99/max seconds from due to
    the first accepted arrival, how many never arrived (expired or failed), and the latest."""
    late: dict[str, list[tuple[float, str]]] = defaultdict(list)
    unsent: dict[str, int] = defaultdict(int)
    names = sorted({window.name for window in windows})
    for firing in records.firings.values():
        group = _group({w.name for w in windows if w.holds(firing.due)})
        arrived = [t for t, status in records.arrivals.get(firing.id, ()) if status < 300]
        if arrived:
            late[group].append((min(arrived) - firing.due, firing.id))
        else:
            unsent[group] += 1
    return {group: _cost(late[group], unsent[group]) for group in [*names, SEVERAL, NO_FAULT]}


def _group(faults: set[str]) -> str:
    if not faults:
        return NO_FAULT
    return faults.pop() if len(faults) == 1 else SEVERAL


def _cost(late: list[tuple[float, str]], unsent: int) -> dict[str, Any]:
    late.sort()
    return {
        "rang": len(late),
        "not_sent": unsent,
        "late_s": {k: round(v, 3) for k, v in spread([s for s, _ in late]).items()},
        "latest": [f"{identity} +{seconds:.1f} s" for seconds, identity in late[-WORST:]],
    }


def to_text(report: dict[str, Any]) -> str:
    """The human report: the verdict first, then counts, faults and lateness."""
    metrics = report["metrics"]
    violations = report["violations"]
    verdict = "PASSED: no violation" if not violations else "FAILED: violations found"
    params = ", ".join(f"{k}={v}" for k, v in report["params"].items())
    lines = [f"tocsin chaos ({params})", verdict, ""]
    for kind, found in violations.items():
        lines.append(f"  {kind}: {found['count']} — {found['meaning']}")
        lines += [f"      {example}" for example in found["examples"]]
    lines.append("counts")
    lines += _rows(metrics["counts"])
    lines.append("faults")
    lines += [f"  {fault}" for fault in _faults(metrics["faults"])]
    lines.append("lateness (seconds from due to first accepted arrival), by when it was due")
    for group, cost in metrics["lateness"].items():
        late = cost["late_s"]
        lines.append(
            f"  {group:<16} rang {cost['rang']:>8,}  p50 {late['p50']:7.3f}  "
            f"p99 {late['p99']:7.3f}  max {late['max']:7.3f}  not sent {cost['not_sent']:,}"
        )
    lines.append(f"logs: {metrics['logs']}")
    return "\n".join(lines)


def _rows(values: dict[str, Any]) -> list[str]:
    flat = list(flatten(values))
    width = max((len(key) for key, _ in flat), default=0)
    return [f"  {key.ljust(width)}  {value}" for key, value in flat]


def _faults(faults: dict[str, Any]) -> list[str]:
    if "kills" not in faults:  # a failover run's: each fault's timings, as measured
        return [
            f"{name}: " + ", ".join(f"{k}={v}" for k, v in fault.items() if k.endswith("_s"))
            for name, fault in faults.items()
        ]
    kills = faults["kills"]
    lines = [f"worker kills: {len(kills)}; workers that exited unasked: {len(faults['exits'])}"]
    postgres = faults["postgres"]
    if isinstance(postgres, str):
        lines.append(f"postgres stop: skipped ({postgres})")
    else:
        lines.append(f"postgres stop: {postgres['seconds']} s")
    receiver = faults["receiver"]
    lines.append(
        f"receiver 503: {receiver['seconds']} s" if isinstance(receiver, dict) else receiver
    )
    return lines
