-- The pending reminders' occurrences are copied into `due`, on a database migrated from
-- before 0021 (`occurrences_to_copy` says so), while the release before keeps running: its
-- API writes and its claims rewrite the reminder's row (a claim moves a series on to its next
-- occurrence there), and its workers load from `reminders_due`.
--
-- 1. The months of `due` are made, this one and the next 12 (`tocsin.store.postgres.months`,
--    as retention makes them; `due` is empty yet), when there are reminders to copy, so that
--    their occurrences land in them: left in the default partition, each month's would move
--    into it in one transaction that holds the loads off (retention's first passes). A
--    trigger on `reminders` keeps, for each write of a session that does not write `due`
--    itself (this release's sessions say `tocsin.writes_due`; the release before's do not),
--    what the copy would make of the row: the occurrence its row names in `due` (the one it
--    named before taken back, as this release's API writes take one back: its row of `due`
--    deleted and a `taken` row of `rings` under its key, which a claim of this release that
--    loaded it before the write then meets, and rings nothing), and its last ring in `rang_due_at` (the newest of its
--    firings, as migration 0032 gives it), which the occurrence carries as the ring before
--    it. It goes after the upgrade (0037).
-- 2. The copy, in batches of `reminders`' pages. Each batch holds the reminders' writes off
--    while it runs (a SHARE lock, waiting at most 5 s for the writes before it, and tried
--    again), so it takes 32 pages at most (about 1,200 reminders; 256, the runner's, held
--    writes for up to a second): a row a write changes is copied before the write or kept by the trigger after
--    it, never copied as it was after the trigger kept it. An occurrence due within the
--    minute is given its `saved_at`, so that this release's sweep finds it if the release
--    before has not rung it by the upgrade. `tocsin migrate --status` says how many rows are
--    left.
-- 3. `occurrences_to_copy` goes, and `due` is vacuumed, so that the loads read its key
--    alone from the first minute (migration 0025), and analysed for their plans.
--
-- On a database whose release already wrote `due`, nothing is copied and no trigger made.

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
CREATE TABLE IF NOT EXISTS occurrences_to_copy (since timestamptz NOT NULL);
CREATE FUNCTION reminders_due_kept() RETURNS trigger LANGUAGE plpgsql AS $kept$
BEGIN
    IF current_setting('tocsin.writes_due', true) = 'on' THEN
        RETURN coalesce(NEW, OLD);
    END IF;
    IF TG_OP <> 'INSERT' AND OLD.status = 'pending' THEN
        DELETE FROM due
        WHERE (lane, rank, bucket, due_at, reminder_id, version)
            = (OLD.shard / 64, coalesce(OLD.priority, 0), OLD.bucket, OLD.due_at, OLD.id,
               OLD.version);
        IF TG_OP = 'DELETE' OR NEW.status <> 'pending'
            OR (NEW.shard, NEW.priority, NEW.bucket, NEW.due_at, NEW.version)
                IS DISTINCT FROM (OLD.shard, OLD.priority, OLD.bucket, OLD.due_at, OLD.version)
        THEN
            INSERT INTO rings (due_at, reminder_id, version, repeat, next_due, taken)
            VALUES (OLD.due_at, OLD.id, OLD.version, false, NULL, true)
            ON CONFLICT DO NOTHING;
        END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    NEW.rang_due_at := greatest(NEW.rang_due_at, (
        SELECT f.due_at FROM firings AS f
        WHERE f.id > NEW.id || '.' AND f.id < NEW.id || '/'
        ORDER BY f.id DESC
        LIMIT 1
    ));
    IF NEW.status = 'pending' THEN
        INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard, saved_at,
            prev_due)
        VALUES (NEW.shard / 64, coalesce(NEW.priority, 0), NEW.bucket, NEW.due_at, NEW.id,
            NEW.version, NEW.shard, clock_timestamp(), NEW.rang_due_at)
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NEW;
END
$kept$;
DO $make$
DECLARE
    this_month timestamp := date_trunc('month', now() AT TIME ZONE 'UTC');
    month timestamp;
    name text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM occurrences_to_copy) THEN
        RETURN;
    END IF;
    CREATE TRIGGER reminders_due_kept BEFORE INSERT OR UPDATE OR DELETE ON reminders
        FOR EACH ROW EXECUTE FUNCTION reminders_due_kept();
    IF NOT EXISTS (SELECT 1 FROM reminders WHERE status = 'pending') THEN
        RETURN;  -- a new database: retention makes its months
    END IF;
    FOR ahead IN 0..12 LOOP
        month := this_month + ahead * interval '1 month';
        name := 'due_' || to_char(month, 'YYYY_MM');
        CONTINUE WHEN to_regclass(name) IS NOT NULL;
        EXECUTE format('CREATE TABLE %I (LIKE due INCLUDING DEFAULTS INCLUDING INDEXES)', name);
        EXECUTE format(
            'ALTER TABLE due ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', name,
            extract(epoch FROM month)::bigint / 60,
            extract(epoch FROM month + interval '1 month')::bigint / 60
        );
    END LOOP;
END
$make$;

-- step: in batches of at most 32 pages over reminders
SET LOCAL lock_timeout = '5s';
SET LOCAL tocsin.writes_due = 'on';
LOCK TABLE reminders IN SHARE MODE;
WITH found AS (
    SELECT r.id, r.status, r.shard, r.priority, r.bucket, r.due_at, r.version, r.rang_due_at,
        (
            SELECT f.due_at FROM firings AS f
            WHERE f.id > r.id || '.' AND f.id < r.id || '/'
            ORDER BY f.id DESC
            LIMIT 1
        ) AS newest
    FROM reminders AS r
    WHERE r.ctid >= format('(%s,0)', $1::bigint)::tid AND r.ctid < format('(%s,0)', $2::bigint)::tid
      AND EXISTS (SELECT 1 FROM occurrences_to_copy)
), rang AS (
    SELECT found.*,
        CASE
            WHEN newest > coalesce(rang_due_at, '-infinity') AND NOT EXISTS (
                SELECT 1 FROM rings AS g
                WHERE (g.due_at, g.reminder_id, g.version) = (found.newest, found.id, found.version)
            ) THEN newest
            ELSE rang_due_at
        END AS last_ring
    FROM found
), kept AS (
    UPDATE reminders AS r SET rang_due_at = rang.last_ring
    FROM rang
    WHERE r.ctid >= format('(%s,0)', $1::bigint)::tid AND r.ctid < format('(%s,0)', $2::bigint)::tid
      AND r.id = rang.id AND rang.last_ring IS DISTINCT FROM rang.rang_due_at
)
INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard, saved_at, prev_due)
SELECT shard / 64, coalesce(priority, 0), bucket, due_at, id, version, shard,
    CASE WHEN due_at < clock_timestamp() + interval '1 minute' THEN clock_timestamp() END,
    last_ring
FROM rang
WHERE status = 'pending'
ON CONFLICT DO NOTHING;

-- step: in one transaction
DROP TABLE occurrences_to_copy;

-- step: outside a transaction
VACUUM (ANALYZE) due;
