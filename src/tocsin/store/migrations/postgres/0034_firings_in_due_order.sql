-- Firings keyed in due order: (due second, reminder id), so that the rings of one minute
-- write the same leaves of the key and a ring changes no leaf it alone writes (the key by id
-- sorted by reminder, and each ring of a busy minute wrote a leaf of its own: a whole page
-- image after each checkpoint). A firing's id stays what the API and every receiver know,
-- `<reminder id>.<due epoch second>`; the due second is worked out from it (`firing_second`,
-- NULL for a text of another shape, which names no firing), so the two never disagree.
-- It replaces firings_due: the status board's minutes and retention's batches are ranges of
-- it. It carries nothing more (firings_due had the state and sent instant): a minute's rows
-- lie together in the heap, inserted in due order, and the minutes the board reads are
-- too recent for an index-only scan (not vacuumed yet), so those columns would only widen
-- each ring's entry, and its WAL, by a sixth.
-- `firings_open` finds a reminder's firings still on their way (queued or being sent: the
-- few a retry or the in-app feed holds, none of a ring sent at its first try), which
-- retention asks about before a reminder goes with its last ring's firing. Its predicate is a
-- CASE, which retention's probes repeat word for word, and which no condition of the sender's
-- reads (TAKE_DELIVERIES: queued or being sent, and due) implies: they keep their own
-- indexes, ordered by when each is due, not this one, ordered by reminder.
-- The table is rewritten in one statement: a maintenance window on a large database.
CREATE OR REPLACE FUNCTION firing_second(id text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE WHEN split_part(id, '.', 2) ~ '^[0-9]{1,18}$'
        THEN split_part(id, '.', 2)::bigint END;

ALTER TABLE firings ADD COLUMN due_second bigint
    GENERATED ALWAYS AS (firing_second(id)) STORED;
ALTER TABLE firings DROP CONSTRAINT firings_pkey;
ALTER TABLE firings ADD CONSTRAINT firings_pkey
    PRIMARY KEY (due_second, reminder_id);
DROP INDEX firings_due;
CREATE INDEX firings_open ON firings (reminder_id)
    WHERE CASE WHEN state IN ('queued', 'sending') THEN true END;
