"""`tocsin import | export`: reminders in bulk, as JSON lines (or CSV in).

An import sends the file through `POST /v1/reminders:batch`, in batches cut the same way
every time from the same file and options, each with an Idempotency-Key made of the file's
digest and the batch's position. Re-running an import that stopped half way (a crash, a
network cut) therefore replays the batches the server already saved, which saves nothing
twice, and saves the rest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tocsin.cli import client_format as fmt
from tocsin.cli.client_command import add_command, owner_of, owner_option
from tocsin.cli.client_http import OK, PARTIAL, REFUSED, Api, ClientError, usage_error
from tocsin.cli.client_records import Line, Refusal, read_records
from tocsin.cli.client_time import default_zone
from tocsin.domain import ReminderStatus

BATCH_ITEMS = 1000  # the API's most per batch
# The API takes 2 MiB a batch; a margin for the envelope and escaping differences.
BATCH_BYTES = 2 * 1024 * 1024 - 64 * 1024
BAR_WIDTH = 30


def register(subparsers: Any) -> None:
    importer = add_command(
        subparsers,
        "import",
        import_file,
        summary="save reminders from a file of JSON lines or CSV, 1,000 a request",
        examples="""\
  tocsin import reminders.jsonl
  tocsin import reminders.csv --owner ana --zone Europe/Paris --channel email
  tocsin export --owner ana > ana.jsonl && tocsin import ana.jsonl --url https://new.example

  tocsin import chores.csv --list 06h2t0k5f07g6e1x9q3d

  A CSV file has a header: text,at,repeat,zone,channel,owner,freshness,metadata (any
  order; metadata as JSON; list and assignee for a shared list's). Empty cells and missing
  columns take the defaults below.
  Re-running the same import (same file, same options) after it stopped saves nothing
  twice: the batches already saved are replayed.""",
    )
    importer.add_argument("file", type=Path, help="JSON lines (.jsonl) or CSV with a header")
    importer.add_argument(
        "--format", choices=("jsonl", "csv"), help="the file's format (default: by its name)"
    )
    owner_option(importer, "reminders, for lines that name none")
    importer.add_argument(
        "--list",
        dest="list_id",
        help="save the lines that name no owner or list in this shared list (instead of an "
        "owner's; an editor's or owner's token of it, or a key of its app)",
    )
    importer.add_argument("--zone", help="for lines without a zone (default TOCSIN_ZONE, …)")
    importer.add_argument(
        "--channel", help="for lines without a channel (default TOCSIN_CHANNEL, else log)"
    )

    exporter = add_command(
        subparsers,
        "export",
        export_reminders,
        summary="print an owner's reminders, or a list's, as JSON lines (what import reads)",
        examples="""\
  tocsin export --owner ana > ana.jsonl
  tocsin export --owner ana --status pending | tocsin import /dev/stdin --format jsonl
  tocsin export --list 06h2t0k5f07g6e1x9q3d > chores.jsonl""",
    )
    owner_option(exporter, "reminders")
    exporter.add_argument("--list", dest="list_id", help="a shared list's reminders instead")
    exporter.add_argument("--status", choices=[s.value for s in ReminderStatus])


# -- import ---------------------------------------------------------------------------------


@dataclass(kw_only=True, slots=True)
class Report:
    """What an import did: the `--json` answer, and the human summary."""

    lines: int = 0
    saved: int = 0
    replayed: int = 0  # saved by an earlier run of the same import
    refused: list[Refusal] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "saved": self.saved,
            "replayed": self.replayed,
            "refused": [r.as_json() for r in sorted(self.refused, key=lambda r: r.line)],
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Batch:
    position: int
    lines: Sequence[Line]


def import_file(api: Api, args: argparse.Namespace) -> int:
    defaults = _defaults(args, api)
    try:
        content = args.file.read_bytes()
    except OSError as error:
        raise usage_error(f"cannot read {args.file}: {error.strerror or error}") from None
    lines, refused = read_records(content, _format(args), defaults)
    report = Report(lines=len(lines) + len(refused), refused=refused)
    key_prefix = _key_prefix(content, defaults)
    progress = Progress(total=len(lines), shown=sys.stderr.isatty())
    for batch in batches(lines):
        _send(api, batch, f"{key_prefix}-{batch.position}", report)
        progress.advance(len(batch.lines))
    progress.done()
    return _finish(report, args)


def _defaults(args: argparse.Namespace, api: Api) -> dict[str, str]:
    found = {
        "list": args.list_id,
        "owner": None if args.list_id else owner_of(args, api),
        "zone": args.zone or default_zone(),
        "channel": args.channel or os.environ.get("TOCSIN_CHANNEL") or "log",
    }
    return {name: value for name, value in found.items() if value}


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return str(args.format)
    return "csv" if args.file.suffix.lower() == ".csv" else "jsonl"


def _key_prefix(content: bytes, defaults: dict[str, str]) -> str:
    """The same for the same file and defaults (the defaults change the items, and a key
    names one exact request: the server refuses a key reused with another body)."""
    digest = hashlib.sha256(content)
    digest.update(json.dumps(defaults, sort_keys=True).encode())
    return f"import-{digest.hexdigest()[:48]}"


def batches(lines: Sequence[Line]) -> Iterator[Batch]:
    """Up to BATCH_ITEMS lines a batch, fewer when they would pass BATCH_BYTES: cut the same
    way from the same lines every time, so a batch's position names the same batch."""
    start, size, position = 0, 0, 0
    for index, line in enumerate(lines):
        size += line.size
        if index - start == BATCH_ITEMS or (size > BATCH_BYTES and index > start):
            yield Batch(position=position, lines=lines[start:index])
            start, size, position = index, line.size, position + 1
    if start < len(lines):
        yield Batch(position=position, lines=lines[start:])


def _send(api: Api, batch: Batch, key: str, report: Report) -> None:
    items = [line.item for line in batch.lines]
    try:
        answer = api.request(
            "POST",
            "/v1/reminders:batch",
            json={"items": items},
            headers={"Idempotency-Key": key},
            retry=True,  # the key makes a resend safe: a lost answer is replayed
        )
    except ClientError as error:
        first, last = batch.lines[0].number, batch.lines[-1].number
        done = report.saved + report.replayed
        error.problem["detail"] = (
            f"{error.problem.get('detail') or error.problem.get('title')} "
            f"(stopped at lines {first}-{last}; {done} reminders before them are saved: "
            "fix the cause and run the same import again to go on from there)"
        )
        raise
    replayed = answer.headers.get("Idempotent-Replayed") == "true"
    for result in answer.body["items"]:
        line = batch.lines[result["index"]]
        if result["status"] == "created":
            if replayed:
                report.replayed += 1
            else:
                report.saved += 1
        else:
            report.refused.extend(_refusals(line.number, result["index"], result["problem"]))


def _refusals(number: int, index: int, problem: dict[str, Any]) -> list[Refusal]:
    prefix = f"items.{index}."
    errors = problem.get("errors") or [{"field": "-", "message": problem.get("detail", "")}]
    return [
        Refusal(
            line=number,
            field=str(e.get("field", "-")).removeprefix(prefix),
            message=str(e.get("message", "")),
        )
        for e in errors
    ]


def _finish(report: Report, args: argparse.Namespace) -> int:
    status = OK
    if report.refused:
        # Nothing in at all is a refusal (1); some in, some not, is partial (4).
        status = PARTIAL if report.saved + report.replayed else REFUSED
    if args.json:
        fmt.emit_json(report.as_json())
        return status
    for refusal in sorted(report.refused, key=lambda r: r.line):
        print(f"line {refusal.line}: {refusal.field}: {refusal.message}", file=sys.stderr)
    earlier = f" ({report.replayed} by an earlier run)" if report.replayed else ""
    print(
        f"saved {report.saved + report.replayed} of {report.lines} lines{earlier}; "
        f"refused {len({r.line for r in report.refused})}"
    )
    return status


class Progress:
    """A bar on stderr while a person watches (a terminal); nothing in a pipe or a log."""

    def __init__(self, *, total: int, shown: bool) -> None:
        self.total, self.sent, self.shown = total, 0, shown and total > 0

    def advance(self, count: int) -> None:
        self.sent += count
        if self.shown:
            filled = BAR_WIDTH * self.sent // self.total
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            print(f"\rimporting [{bar}] {self.sent:,}/{self.total:,}", end="", file=sys.stderr)
            sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            print(file=sys.stderr)


# -- export ---------------------------------------------------------------------------------


def export_reminders(api: Api, args: argparse.Namespace) -> int:
    """JSON lines whatever `--json` says: one reminder a line is already for scripts."""
    whose = {"list": args.list_id} if args.list_id else {"owner": owner_of(args, api)}
    query = whose | {"status": args.status}
    for reminder in api.pages("/v1/reminders", "reminders", **query):
        print(json.dumps(reminder, ensure_ascii=False))
    return OK
