-- Firings keyed in due order: (due second, reminder id), so that the rings of one minute
-- write the same leaves of the key and a ring changes no leaf it alone writes (the key by id
-- sorted by reminder, and each ring of a busy minute wrote a leaf of its own: a whole page
-- image after each checkpoint). A firing's id stays what the API and every receiver know,
-- `<reminder id>.<due epoch second>`, and is no longer stored: it is the key's two columns,
-- joined; an id handed in is parsed into the key it names (`firing_second`: NULL for a text
-- of another shape than a reminder id, a dot and up to 18 digits, which names no firing).
-- The key replaces firings_due: the status board's minutes and retention's batches are
-- ranges of it. It carries nothing more (firings_due had the state and sent instant): a
-- minute's rows lie together in the heap, inserted in due order, and the minutes the board
-- reads are too recent for an index-only scan (not vacuumed yet), so those columns would only
-- widen each ring's entry, and its WAL, by a sixth.
-- The table is made anew, its fixed-width columns first (no padding before `due_second`),
-- with its indexes and settings (0010), and every row copied, in one transaction: a
-- maintenance window on a large database.
-- `firings_open` finds a reminder's firings still on their way (queued or being sent: the
-- few a retry or the in-app feed holds, none of a ring sent at its first try), which
-- retention asks about before a reminder goes with its last ring's firing. Its predicate is a
-- CASE, which retention's probes repeat word for word, and which no condition of the sender's
-- reads (TAKE_DELIVERIES: queued or being sent, and due) implies: they keep their own
-- indexes, ordered by when each is due, not this one, ordered by reminder.
CREATE OR REPLACE FUNCTION firing_second(id text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE WHEN id ~ '^[^.]+\.[0-9]{1,18}$' THEN split_part(id, '.', 2)::bigint END;

CREATE TABLE firings_keyed (
    due_second bigint NOT NULL,
    due_at timestamptz NOT NULL,
    deadline timestamptz NOT NULL,
    created_at timestamptz NOT NULL,
    next_attempt_at timestamptz,
    lease_until timestamptz,
    sent_at timestamptz,
    done_at timestamptz,
    prev_due timestamptz,
    attempts integer NOT NULL DEFAULT 0,
    shard smallint NOT NULL,
    priority smallint CONSTRAINT firings_priority_check CHECK (priority = 1),
    reminder_id text COLLATE "C" NOT NULL,
    owner text COLLATE "C" NOT NULL,
    state text NOT NULL,
    channel text NOT NULL,
    text text NOT NULL,
    metadata json,
    source text,
    sender text,
    provider_id text,
    last_error text,
    snoozed_by text COLLATE "C",
    sent_to text COLLATE "C",
    CONSTRAINT firings_state CHECK (state IN ('queued', 'sending', 'sent', 'failed', 'expired'))
) WITH (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);
INSERT INTO firings_keyed (
    due_second, due_at, deadline, created_at, next_attempt_at, lease_until, sent_at, done_at,
    prev_due, attempts, shard, priority, reminder_id, owner, state, channel, text, metadata,
    source, sender, provider_id, last_error, snoozed_by, sent_to
)
SELECT firing_second(id), due_at, deadline, created_at, next_attempt_at, lease_until, sent_at,
    done_at, prev_due, attempts, shard, priority, reminder_id, owner, state, channel, text,
    metadata, source, sender, provider_id, last_error, snoozed_by, sent_to
FROM firings
ORDER BY firing_second(id), reminder_id;
DROP TABLE firings;
ALTER TABLE firings_keyed RENAME TO firings;
ALTER TABLE firings ADD CONSTRAINT firings_pkey PRIMARY KEY (due_second, reminder_id);
CREATE INDEX firings_feed ON firings (owner, deadline) WHERE channel = 'inapp';
CREATE INDEX firings_queued ON firings (next_attempt_at) WHERE state = 'queued';
CREATE INDEX firings_sending ON firings (lease_until) WHERE state = 'sending';
CREATE INDEX firings_open ON firings (reminder_id)
    WHERE CASE WHEN state IN ('queued', 'sending') THEN true END;
