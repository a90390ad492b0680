"""A migration's steps, as its `-- step:` lines declare them (`tocsin.store.migrations`)."""

from __future__ import annotations

import pytest

from tocsin.store.migrations import ONE_TRANSACTION, OUTSIDE_A_TRANSACTION, Migration

STEPPED = """-- A migration in steps.

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
ALTER TABLE t ADD COLUMN c integer;

-- step: in batches over t
UPDATE t SET c = 1 WHERE ctid >= format('(%s,0)', $1::bigint)::tid
  AND ctid < format('(%s,0)', $2::bigint)::tid;

-- step: in batches of at most 32 pages over t
LOCK TABLE t IN SHARE MODE;
INSERT INTO u SELECT c FROM t WHERE ctid >= format('(%s,0)', $1::bigint)::tid
  AND ctid < format('(%s,0)', $2::bigint)::tid;

-- step: outside a transaction
CREATE INDEX CONCURRENTLY t_c ON t (c);
"""


def test_steps_are_read_in_order_with_their_way_and_table() -> None:
    steps = Migration(version=1, name="stepped", sql=STEPPED).steps()

    assert [(step.how, step.table, step.most_pages) for step in steps] == [
        (ONE_TRANSACTION, None, None),
        ("in batches over t", "t", None),
        ("in batches of at most 32 pages over t", "t", 32),
        (OUTSIDE_A_TRANSACTION, None, None),
    ]
    assert [len(step.statements()) for step in steps[1:]] == [1, 2, 1]
    assert steps[2].statements()[0] == "LOCK TABLE t IN SHARE MODE"


def test_a_migration_without_steps_is_one_transaction() -> None:
    [step] = Migration(version=1, name="plain", sql="ALTER TABLE t ADD COLUMN c integer;").steps()

    assert (step.how, step.table) == (ONE_TRANSACTION, None)


@pytest.mark.parametrize(
    "how", ["in batches of 32 pages over t", "in batches over T", "at once", "in batches"]
)
def test_a_step_of_no_known_way_is_refused(how: str) -> None:
    with pytest.raises(ValueError, match="no step is"):
        Migration(version=7, name="odd", sql=f"-- step: {how}\nSELECT 1;").steps()


def test_a_statement_before_the_first_step_is_refused() -> None:
    with pytest.raises(ValueError, match="a statement before its first step"):
        Migration(version=7, name="odd", sql="SELECT 1;\n-- step: in one transaction\n").steps()
