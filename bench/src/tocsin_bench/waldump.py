"""The WAL of a window by relation: `pg_waldump` over a WAL range, each record's bytes counted
to the relation of its first block and each full-page image to the relation of its page.

Only where the server's WAL is on this machine and readable, and before the server recycles
it (read it right after the window): otherwise None, and why not.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import asyncpg

_RECORD = re.compile(r"len \(rec/tot\):\s*\d+/\s*(\d+)")
_BLOCK = re.compile(r"blkref #\d+: rel \d+/(\d+)/(\d+)(?: fork \w+)? blk \d+( FPW)?")
_NAMES = """
SELECT c.relfilenode::text, n.nspname || '.' || c.relname FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.relfilenode <> 0
"""
_DATABASE = "SELECT oid FROM pg_database WHERE datname = current_database()"
_TOP = 8  # relations listed; the rest are summed as "other"
_ELSEWHERE = "(other databases)"  # a server shared with other work writes WAL of its own


async def by_relation(connection: asyncpg.Connection, wal_range: str, rings: int) -> dict[str, Any]:
    """{relation: {"bytes": …, "fpi": …}} a ring over `wal_range` (`start-end`), largest
    first, or {"null_reason": …}."""
    start, _, end = wal_range.partition("-")
    try:
        folder = Path(await connection.fetchval("SHOW data_directory")) / "pg_wal"
        major = int(await connection.fetchval("SHOW server_version_num")) // 10000
    except asyncpg.InsufficientPrivilegeError:
        return {"null_reason": "the data directory is shown to superusers only"}
    tool = _tool(major)
    if tool is None or not folder.is_dir():
        return {"null_reason": f"no pg_waldump {major}, or {folder} is not on this machine"}
    names = dict(await connection.fetch(_NAMES))
    database = str(await connection.fetchval(_DATABASE))
    process = await asyncio.create_subprocess_exec(
        tool, "-p", str(folder), "-s", start, "-e", end,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    if process.returncode != 0:
        return {"null_reason": f"pg_waldump: {err.decode(errors='replace').strip()[:200]}"}
    return _tally(out.decode(errors="replace").splitlines(), names, database, max(rings, 1))


def _tool(major: int) -> str | None:
    bundled = Path(f"/usr/lib/postgresql/{major}/bin/pg_waldump")
    return str(bundled) if bundled.exists() else shutil.which("pg_waldump")


def _tally(lines: list[str], names: dict[str, str], database: str, rings: int) -> dict[str, Any]:
    """Each record's bytes to the relation of its first block, each image to its page's;
    a relation of another database (`database` is the run's oid) counts as `_ELSEWHERE`,
    whatever its number, since relation numbers repeat across databases."""

    def name(base: str, node: str) -> str:
        return names.get(node, "other") if base == database else _ELSEWHERE

    size: Counter[str] = Counter()
    images: Counter[str] = Counter()
    for line in lines:
        record = _RECORD.search(line)
        if record is None:
            continue
        blocks = _BLOCK.findall(line)
        owner = name(*blocks[0][:2]) if blocks else "(no relation)"
        size[owner] += int(record.group(1))
        for base, node, image in blocks:
            if image:
                images[name(base, node)] += 1
    ranked = sorted((set(size) | set(images)) - {_ELSEWHERE}, key=lambda n: (-size[n], n))
    shown, rest = ranked[:_TOP], ranked[_TOP:]
    groups = [(n, [n]) for n in shown] + ([("other", rest)] if rest else [])
    if _ELSEWHERE in size or _ELSEWHERE in images:
        groups.append((_ELSEWHERE, [_ELSEWHERE]))
    return {
        label: {
            "bytes": round(sum(size[n] for n in members) / rings, 1),
            "fpi": round(sum(images[n] for n in members) / rings, 3),
        }
        for label, members in groups
    }
