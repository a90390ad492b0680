"""Reading an import file: JSON lines or CSV with a header, each record a reminder to send
with the number of the line it came from (what the report names), or why it cannot be sent."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tocsin.domain import LIST_OWNER, ReminderStatus

# What `export` writes that the server works out itself: dropped on import, so an export
# imports as it is. Any other unknown field still goes to the server, which names it (a typo
# such as `repat` is refused, not ignored).
READ_ONLY = frozenset(
    {
        "id",
        "rule",
        "status",
        "next",
        "next_local",
        "next_occurrence",
        "source",
        "created_at",
        "updated_at",
        "last_firing",
        "snoozed_from",
        "warnings",
    }
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Line:
    number: int  # 1-based, in the file (a CSV record spanning lines: where it starts)
    item: dict[str, Any]
    size: int  # its length as JSON, to keep a batch under the API's body limit


@dataclass(frozen=True, kw_only=True, slots=True)
class Refusal:
    line: int
    field: str
    message: str

    def as_json(self) -> dict[str, Any]:
        return {"line": self.line, "field": self.field, "message": self.message}


def read_records(
    content: bytes, kind: str, defaults: Mapping[str, str]
) -> tuple[list[Line], list[Refusal]]:
    """The records of `content` (`kind`: jsonl or csv) with `defaults` filling the fields a
    record leaves out, and the records that cannot be sent, each with its line number. Whose
    a reminder is (`owner`, or `list`) is filled in only for a record that names neither; an
    exported list's reminder names its list, and the list's owner name it also carries is
    left out (a create in a list takes none)."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return [], [Refusal(line=1, field="file", message=f"not UTF-8 text: {error}")]
    records = _csv(text) if kind == "csv" else _json_lines(text)
    lines: list[Line] = []
    refused: list[Refusal] = []
    for number, record in records:
        if isinstance(record, Refusal):
            refused.append(record)
            continue
        problem = _unsendable(number, record)
        if problem is not None:
            refused.append(problem)
            continue
        given = {k: v for k, v in record.items() if k not in READ_ONLY}
        if given.get("list") and str(given.get("owner", "")).startswith(LIST_OWNER):
            del given["owner"]
        whose = {"owner", "list"}
        filled = {k: v for k, v in defaults.items() if k not in whose or not whose & given.keys()}
        item = {**filled, **given}
        size = len(json.dumps(item, ensure_ascii=False).encode()) + 1
        lines.append(Line(number=number, item=item, size=size))
    return lines, refused


Record = tuple[int, "dict[str, Any] | Refusal"]


def _json_lines(text: str) -> Iterator[Record]:
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except ValueError as error:
            yield number, Refusal(line=number, field="line", message=f"not JSON: {error}")
            continue
        if not isinstance(value, dict):
            message = "not a JSON object ({...}): each line is one reminder"
            yield number, Refusal(line=number, field="line", message=message)
            continue
        yield number, value


def _csv(text: str) -> Iterator[Record]:
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    start = 2  # the header is line 1
    try:
        for row in reader:
            yield start, _csv_item(start, row)
            start = reader.line_num + 1
    except csv.Error as error:
        yield start, Refusal(line=start, field="line", message=f"not CSV: {error}")


def _csv_item(number: int, row: Mapping[str | None, Any]) -> dict[str, Any] | Refusal:
    if None in row:  # DictReader's key for cells beyond the header
        return Refusal(line=number, field="line", message="more cells than the header has")
    item = {name: value for name, value in row.items() if name and value not in (None, "")}
    if "metadata" in item:
        try:
            item["metadata"] = json.loads(item["metadata"])
        except ValueError as error:
            return Refusal(line=number, field="metadata", message=f"not JSON: {error}")
    return item


def _unsendable(number: int, record: Mapping[str, Any]) -> Refusal | None:
    """An exported reminder that no longer rings would ring again if imported: refused here."""
    status = record.get("status")
    if status is None or status == ReminderStatus.PENDING:
        return None
    message = (
        f"a {status} reminder is not imported (it would ring again); "
        "`tocsin export --status pending` exports only what still rings"
    )
    return Refusal(line=number, field="status", message=message)
