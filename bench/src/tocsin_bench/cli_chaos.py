"""`tocsin chaos`: a repeatable run of Tocsin under faults on PostgreSQL, checked end to end
(see docs/reliability.md); a human report on stdout, or `--json`; exit 1 on any violation."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

from tocsin.errors import InvalidInput
from tocsin.time.durations import parse_duration
from tocsin_bench.chaos_plan import FAULTS

WEEK = 7 * 86400
T = TypeVar("T")


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "chaos",
        help="run Tocsin under faults and check every ring (see docs/reliability.md)",
        description="Reminders due at a steady rate through `tocsin api`, rung by `tocsin "
        "worker`s into a local webhook receiver, while workers are killed, PostgreSQL is "
        "stopped, the receiver fails and cancels, snoozes and edits race the due second. "
        "Every fault's timing is scaled from the 10-minute run. Exits 1 on any violation.",
    )
    parser.add_argument("--duration", default="10m", help="how long rings fall due (10m)")
    parser.add_argument("--rate", type=int, default=500, help="reminders due per second")
    parser.add_argument("--workers", type=int, default=3, help="tocsin worker processes")
    parser.add_argument("--freshness", default="10m", help="each reminder's freshness (10m)")
    parser.add_argument("--snooze", default="30s", help="what each snooze asks for (30s)")
    parser.add_argument("--edit-by", default="30s", help="how much later an edit moves `at`")
    parser.add_argument(
        "--races", type=float, default=3.0, help="cancels, snoozes and edits a second, in turn"
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=FAULTS,
        help="leave a fault out (repeatable)",
    )
    parser.add_argument("--seed", type=int, default=1, help="which workers die, and when")
    parser.add_argument(
        "--pg-url",
        help="PostgreSQL server to make the throw-away database on (default "
        "TOCSIN_TEST_POSTGRES, TOCSIN_DATABASE_URL, else postgresql://postgres@127.0.0.1:5432)",
    )
    parser.add_argument(
        "--failover",
        action="store_true",
        help="on a pg_auto_failover cluster it starts (a monitor, a primary and its "
        "synchronous standby): the primary's server is killed, the standby promoted, the old "
        "primary rejoins; then a planned switchover. The other faults are left out",
    )
    parser.add_argument("--json", action="store_true", help="JSON on stdout instead of text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from tocsin_bench.chaos import run_chaos
    from tocsin_bench.chaos_plan import ChaosSpec
    from tocsin_bench.chaos_report import to_text
    from tocsin_bench.report import to_json

    try:
        spec = ChaosSpec(
            duration=_seconds(args.duration, "--duration", maximum=WEEK),
            rate=args.rate,
            workers=args.workers,
            freshness=_seconds(args.freshness, "--freshness", maximum=WEEK),
            snooze=_seconds(args.snooze, "--snooze", maximum=WEEK),
            edit_by=_seconds(args.edit_by, "--edit-by", maximum=WEEK),
            races_per_second=args.races,
            pg_url=args.pg_url,
            skip=frozenset(args.skip),
            seed=args.seed,
            failover=args.failover,
        )
    except InvalidInput as error:
        print(f"tocsin chaos: {error.field}: {error.message}", file=sys.stderr)
        return 2
    try:
        report = asyncio.run(_stopped_by_sigterm(run_chaos(spec)))
    except asyncio.CancelledError:
        print("tocsin chaos: stopped by SIGTERM; what it started is stopped", file=sys.stderr)
        return 143
    sys.stdout.write((to_json([report]) if args.json else to_text(report)) + "\n")
    return 1 if report["violations"] else 0


async def _stopped_by_sigterm(work: Coroutine[Any, Any, T]) -> T:
    """`work`, cancelled on SIGTERM as on Ctrl-C: its clean-up runs (the processes and the
    failover cluster it started, whose keepers run in sessions of their own and would
    outlive it), where SIGTERM's default would end it at once."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await work
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def _seconds(text: str, field: str, *, maximum: int) -> int:
    return parse_duration(text, field=field, minimum=1, maximum=maximum)
