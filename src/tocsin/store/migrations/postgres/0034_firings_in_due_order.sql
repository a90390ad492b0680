-- Firings keyed in due order: (due second, reminder id), so that the rings of one minute
-- write the same leaves of the key and a ring changes no leaf it alone writes (the key by id
-- sorted by reminder, and each ring of a busy minute wrote a leaf of its own: a whole page
-- image after each checkpoint). A firing's id stays what the API and every receiver know,
-- `<reminder id>.<due epoch second>`, and once migration 0035 drops the `id` column it is no
-- longer stored: it is the key's two columns, joined; an id handed in is parsed into the key
-- it names (`firing_second`: NULL for a text of another shape than a reminder id, a dot and
-- up to 18 digits, which names no firing).
--
-- With the service running: the previous release's processes keep reading and writing `id`
-- while this runs, and this release's write the key; until migration 0035 each row holds
-- both, the one a process did not write filled in by a trigger. The column is added (no
-- rewrite), the rows written before are given theirs in batches of pages, oldest first (each
-- a transaction of its own; `tocsin migrate --status` says how many are left), with the ring
-- before each where migration 0033 left it to this pass, and the new
-- key and `firings_open` are built CONCURRENTLY. Nothing here holds a write off for longer
-- than adding a column does.
--
-- `firings_open` finds a reminder's firings still on their way (queued or being sent: the
-- few a retry or the in-app feed holds, none of a ring sent at its first try), which
-- retention asks about before a reminder goes with its last ring's firing. Its predicate is a
-- CASE, which retention's probes repeat word for word, and which no condition of the sender's
-- reads (TAKE_DELIVERIES: queued or being sent, and due) implies: they keep their own
-- indexes, ordered by when each is due, not this one, ordered by reminder.

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
CREATE OR REPLACE FUNCTION firing_second(id text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE WHEN id ~ '^[^.]+\.[0-9]{1,18}$' THEN split_part(id, '.', 2)::bigint END;
ALTER TABLE firings ADD COLUMN due_second bigint;
ALTER TABLE firings ADD CONSTRAINT firings_due_second_set CHECK (due_second IS NOT NULL)
    NOT VALID;
CREATE FUNCTION firings_keyed_both() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.due_second IS NULL THEN
        NEW.due_second := firing_second(NEW.id);
    END IF;
    IF NEW.id IS NULL THEN
        NEW.id := NEW.reminder_id || '.' || NEW.due_second;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER firings_keyed_both BEFORE INSERT OR UPDATE ON firings
    FOR EACH ROW EXECUTE FUNCTION firings_keyed_both();

-- step: in batches over firings
UPDATE firings AS f SET due_second = firing_second(f.id),
    prev_due = coalesce(f.prev_due, (
        SELECT before.due_at FROM firings AS before
        WHERE before.id > f.reminder_id || '.' AND before.id < f.id
        ORDER BY before.id DESC
        LIMIT 1
    ))
WHERE f.ctid >= format('(%s,0)', $1::bigint)::tid AND f.ctid < format('(%s,0)', $2::bigint)::tid
  AND f.due_second IS NULL;

-- step: outside a transaction
ALTER TABLE firings VALIDATE CONSTRAINT firings_due_second_set;
DROP INDEX CONCURRENTLY IF EXISTS firings_key;
CREATE UNIQUE INDEX CONCURRENTLY firings_key ON firings (due_second, reminder_id);
DROP INDEX CONCURRENTLY IF EXISTS firings_open;
CREATE INDEX CONCURRENTLY firings_open ON firings (reminder_id)
    WHERE CASE WHEN state IN ('queued', 'sending') THEN true END;
