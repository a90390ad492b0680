"""The report of a firing benchmark, read from a real database: lost reminders are counted
right, and on SQLite in one pass (the count once scanned every firing per reminder, so a
100,000-reminder run never finished: at the size here that would outlast the test's timeout),
and a reminder due after the run (`bench burst --among`) is not lost."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from tests.integration.store.factories import LEASE, NOW, claim, reminder
from tests.support.keys import TEST_KEYRING
from tocsin.store import open_store
from tocsin.store.codec import bucket_of
from tocsin_bench.outcome import read_outcome

REMINDERS = 100_000
LOST = 7  # reminders left without a firing


@pytest.mark.timeout(60)
async def test_lost_reminders_are_counted_in_one_pass_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bench.db'}"
    store = await open_store(url, keyring=TEST_KEYRING)
    try:
        await store.migrate()
        model = reminder()
        await store.add_reminders([model])
        await store.claim([claim(model)], sender="bench", now=NOW, lease=LEASE)
        await store.add_reminders([reminder(due_at=NOW + timedelta(days=3))])  # not due yet
    finally:
        await store.close()
    _copy_the_model(tmp_path / "bench.db", model.id)

    outcome = await read_outcome(url, bucket_of(model.due_at or NOW))

    assert outcome["firings"] == REMINDERS - LOST
    assert outcome["lost"] == LOST


def _copy_the_model(path: Path, model: str) -> None:
    """REMINDERS reminders like the model, every one but LOST of them with its firing."""
    with sqlite3.connect(path) as connection:
        for table, key, count in (
            ("reminders", "id", REMINDERS),
            ("firings", "reminder_id", REMINDERS - LOST),
        ):
            columns = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
            copied = {
                "id": "printf('r%06d', n)" if table == "reminders" else "printf('r%06d.1', n)",
                "reminder_id": "printf('r%06d', n)",
            }
            values = ", ".join(copied.get(column, column) for column in columns)
            connection.execute(
                f"""WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq
                    WHERE n < ?)
                INSERT INTO {table} ({", ".join(columns)})
                SELECT {values} FROM seq, {table} WHERE {table}.{key} = ?""",
                (count, model),
            )
        connection.execute("DELETE FROM firings WHERE reminder_id = ?", (model,))
        connection.execute("DELETE FROM reminders WHERE id = ?", (model,))
