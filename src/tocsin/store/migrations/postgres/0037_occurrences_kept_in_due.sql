-- applies: after the upgrade
-- The release before is gone: `due` is this release's alone to write, so the trigger that
-- kept it for the release before's writes goes (migration 0035), with `reminders_due`, the
-- index its workers loaded from, which nothing reads any more (dropped CONCURRENTLY: writes to
-- `reminders` go on meanwhile).

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
DROP TRIGGER IF EXISTS reminders_due_kept ON reminders;
DROP FUNCTION IF EXISTS reminders_due_kept();

-- step: outside a transaction
DROP INDEX CONCURRENTLY IF EXISTS reminders_due;
