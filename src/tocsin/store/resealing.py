"""`Store.reseal_secrets` for both backends: the walk over every sealed column is here; a
backend supplies only its page read and its conditional write (named queries per column)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from tocsin.errors import SecretUnreadable
from tocsin.keyring import Keyring
from tocsin.store.base import Resealed
from tocsin.store.rows import resealed_address

SEALED_COLUMNS = ("apps.webhook_secret", "contacts.secret", "contacts.address", "secrets.value")
"""Every column that holds a sealed secret, named `table.column`; each is keyed by one text
column (apps by name, contacts by id, secrets by name). `contacts.address` is JSON whose
credential fields are sealed (`rows.SEALED_FIELDS`), the others whole values."""

# How a stored value of a column is sealed afresh: None when it is sealed with the first key.
_RESEALERS: dict[str, Callable[[Keyring, str], str | None]] = {
    "contacts.address": lambda keyring, stored: resealed_address(stored, keyring),
}

PAGE = 500  # rows read, and written back in one short transaction, at a time

ReadPage = Callable[[str, str, int], Awaitable[Sequence[tuple[str, str]]]]
"""(column, after key, limit) → up to `limit` (key, stored value) pairs with a value, keys
after `after`, in key order."""

WritePage = Callable[[str, Sequence[tuple[str, str, str]]], Awaitable[int]]
"""(column, [(key, value read, new value)]) → how many rows still held the value read and
now hold the new one, in one transaction."""


async def reseal(keyring: Keyring, read_page: ReadPage, write_page: WritePage) -> Resealed:
    """One pass over `SEALED_COLUMNS`: see `Store.reseal_secrets`."""
    resealed = raced = 0
    for column in SEALED_COLUMNS:
        after = ""
        while True:
            rows = await read_page(column, after, PAGE)
            changes = _changes(keyring, column, rows)
            if changes:
                applied = await write_page(column, changes)
                resealed += applied
                raced += len(changes) - applied
            if len(rows) < PAGE:
                break
            after = rows[-1][0]
    return Resealed(resealed=resealed, raced=raced)


def _changes(
    keyring: Keyring, column: str, rows: Sequence[tuple[str, str]]
) -> list[tuple[str, str, str]]:
    changes = []
    reseal_one = _RESEALERS.get(column, Keyring.reseal)
    for key, stored in rows:
        try:
            new = reseal_one(keyring, stored)
        except SecretUnreadable as error:
            raise SecretUnreadable(f"{column} of {key!r}: {error}") from error
        if new is not None:
            changes.append((key, stored, new))
    return changes
