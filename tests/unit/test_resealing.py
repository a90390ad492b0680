"""The walk `reseal_secrets` shares between backends, over fake pages: what it rewrites,
and that a value changed by another process meanwhile is counted, never overwritten."""

from __future__ import annotations

from collections.abc import Sequence, Set

import pytest

from tocsin.errors import SecretUnreadable
from tocsin.keyring import Keyring, new_key
from tocsin.store import resealing

OLD, NEW = new_key(), new_key()


class Table:
    """Stored values by column and key; `changed` ones are rewritten by "another process"
    between the read and the write."""

    def __init__(self, values: dict[str, dict[str, str]], changed: Set[str] = frozenset()) -> None:
        self.values = values
        self.changed = set(changed)

    async def read(self, column: str, after: str, limit: int) -> list[tuple[str, str]]:
        rows = sorted((k, v) for k, v in self.values.get(column, {}).items() if k > after)
        return rows[:limit]

    async def write(self, column: str, changes: Sequence[tuple[str, str, str]]) -> int:
        applied = 0
        for key, old, new in changes:
            if key in self.changed:
                self.values[column][key] = "written meanwhile"
                continue
            if self.values[column][key] == old:
                self.values[column][key] = new
                applied += 1
        return applied


async def test_every_column_is_walked_page_by_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resealing, "PAGE", 2)
    old, both = Keyring.parse(OLD), Keyring.parse(f"{NEW},{OLD}")
    current = both.seal("already")
    table = Table(
        {
            "apps.webhook_secret": {f"app{n}": old.seal(f"a{n}") for n in range(5)},
            "contacts.secret": {"c1": "whsec_plain", "c2": current},
            "secrets.value": {"owner-token": old.seal("signing")},
        }
    )

    done = await resealing.reseal(both, table.read, table.write)

    assert (done.resealed, done.raced) == (7, 0)
    assert table.values["contacts.secret"]["c2"] == current  # not rewritten
    for column in table.values.values():
        assert all(both.is_current(value) for value in column.values())
    assert Keyring.parse(NEW).open(table.values["apps.webhook_secret"]["app4"]) == "a4"


async def test_a_value_changed_meanwhile_is_left_and_counted() -> None:
    both = Keyring.parse(f"{NEW},{OLD}")
    table = Table({"contacts.secret": {"c1": "whsec_a", "c2": "whsec_b"}}, changed={"c2"})

    done = await resealing.reseal(both, table.read, table.write)

    assert (done.resealed, done.raced) == (1, 1)
    assert table.values["contacts.secret"]["c2"] == "written meanwhile"


async def test_a_value_no_key_opens_is_named_by_its_row() -> None:
    stranger = Keyring.parse(new_key()).seal("whsec_x")
    table = Table({"apps.webhook_secret": {"phone": stranger}})

    with pytest.raises(SecretUnreadable, match=r"apps\.webhook_secret of 'phone': a stored"):
        await resealing.reseal(Keyring.parse(NEW), table.read, table.write)
