-- -- migrations -------------------------------------------------------------------------------

-- name: LOCK_MIGRATIONS
-- Tried, not waited for: a run waiting inside a statement would hold a transaction open, and
-- an index another run builds CONCURRENTLY waits for every transaction open before it ends.
SELECT pg_try_advisory_lock($1)

-- name: UNLOCK_MIGRATIONS
SELECT pg_advisory_unlock($1)

-- name: CREATE_SCHEMA_MIGRATIONS
-- The runner's own bookkeeping table, made before any migration runs.
CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    name text NOT NULL,
    CONSTRAINT schema_migrations_pkey PRIMARY KEY (version)
)

-- name: HAS_SCHEMA_MIGRATIONS
-- Whether the bookkeeping table exists (a database never migrated has none).
SELECT to_regclass('schema_migrations') IS NOT NULL

-- name: RECORD_MIGRATION
INSERT INTO schema_migrations (version, name) VALUES ($1, $2)

-- name: CREATE_MIGRATION_STEPS
-- How far each migration under way has gone: its steps ended, and its batches' next page of
-- the pages its table had when they began (`tocsin.store.postgres.migrating`). A migration's
-- rows go when it is recorded applied.
CREATE TABLE IF NOT EXISTS schema_migration_steps (
    version integer NOT NULL,
    step integer NOT NULL,
    next_page bigint,
    pages bigint,
    done_at timestamptz,
    CONSTRAINT schema_migration_steps_pkey PRIMARY KEY (version, step)
)

-- name: HAS_MIGRATION_STEPS
SELECT to_regclass('schema_migration_steps') IS NOT NULL

-- name: STEPS_UNDER_WAY
SELECT version, step, next_page, pages, done_at FROM schema_migration_steps

-- name: STEP_ENDED
INSERT INTO schema_migration_steps (version, step, done_at) VALUES ($1, $2, now())
ON CONFLICT (version, step) DO UPDATE SET done_at = excluded.done_at

-- name: FORGET_STEPS
DELETE FROM schema_migration_steps WHERE version = $1

-- name: STEP_PAGES
SELECT next_page, pages FROM schema_migration_steps WHERE version = $1 AND step = $2

-- name: TABLE_PAGES
-- The pages table $1 has now.
SELECT pg_relation_size($1::text::regclass) / current_setting('block_size')::bigint

-- name: START_BATCHES
INSERT INTO schema_migration_steps (version, step, next_page, pages) VALUES ($1, $2, 0, $3)

-- name: BATCH_ENDED
UPDATE schema_migration_steps SET next_page = $3 WHERE version = $1 AND step = $2

-- name: ROWS_IN_PAGES
-- About how many rows $2 pages of table $1 hold, from its statistics (NULL before any).
SELECT round($2 * reltuples / relpages)::bigint FROM pg_class
WHERE oid = $1::text::regclass AND relpages > 0 AND reltuples >= 0

-- -- reminders --------------------------------------------------------------------------------

-- name: ADD_REMINDERS
-- Save a batch of reminders and, when $1 is not NULL, the request's idempotency record, in one
-- statement (so all or nothing), each pending one's occurrence waiting in `due` with what its
-- ring says ({ring}: `_RING_CONTENT` of the row saved); then announce the reminders due soon ($27: `shard:second`
-- payloads), delivered on commit. $28…$32: the reminders' priorities, whether each ignores
-- quiet hours, their alerts and their nags (columns of $7…$26).
WITH saved_key AS (
    INSERT INTO idempotency_keys (scope, key, request_hash, status_code, body, created_at)
    SELECT $1::text, $2::text, $3::text, $4::integer, $5::bytea, $6::timestamptz
    WHERE $1::text IS NOT NULL
), saved AS (
    INSERT INTO reminders (
        id, owner, shard, text, channel, zone, anchor, rule, at, repeat, status, due_at,
        bucket, freshness, metadata, source, snoozed_from, version, created_at, updated_at,
        priority, ignore_quiet, alerts, nag, nags
    )
    SELECT * FROM unnest(
        $7::text[], $8::text[], $9::smallint[], $10::text[], $11::text[], $12::text[],
        $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::timestamptz[],
        $19::integer[], $20::integer[], $21::json[], $22::text[], $23::text[], $24::integer[],
        $25::timestamptz[], $26::timestamptz[], $28::smallint[], $29::boolean[],
        $30::text[], $31::integer[], $32::smallint[]
    )
    RETURNING *
), waiting AS (
    INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard, saved_at, ring)
    SELECT shard / 64, coalesce(priority, 0), bucket, due_at, id, version, shard,
        clock_timestamp(), {ring}
    FROM saved
    WHERE status = 'pending'
)
SELECT pg_notify('tocsin_due', wake) FROM unnest($27::text[]) AS wake

-- name: ADD_REMINDER
-- `ADD_REMINDERS` for one reminder, written out with plain parameters: most creates save one,
-- and one-element arrays through `unnest` cost a third more client CPU a save (56 µs, not 41:
-- docs/benchmarks.md, "One reminder, one single-row INSERT"). The parameters are those of `ADD_REMINDERS` in the same order, each a value instead of an
-- array; $27 is the wake-up payload, or NULL when the reminder is not due soon. With a cap
-- ($33 > 0), nothing is saved when the reminder's (owner, app) pair keeps $33 pending
-- already, counted as PENDING_COUNTS counts (among at most 4 × $33 of the owner's rows:
-- base.CAP_READS): the check is in the statement because as a query of its own it was a
-- round trip more per create. Answers whether it saved.
WITH room AS (
    SELECT $33::integer = 0 OR (
        SELECT count(*) FILTER (
            WHERE mine.source IS NOT DISTINCT FROM $22::text AND {waiting}
        )
        FROM (
            SELECT id, version, due_at, rule, alerts, nag, status, source FROM reminders
            WHERE owner = $8::text LIMIT 4 * $33::integer
        ) AS mine
    ) < $33::integer AS ok
), saved_key AS (
    INSERT INTO idempotency_keys (scope, key, request_hash, status_code, body, created_at)
    SELECT $1::text, $2::text, $3::text, $4::integer, $5::bytea, $6::timestamptz
    WHERE $1::text IS NOT NULL AND (SELECT ok FROM room)
), saved AS (
    INSERT INTO reminders (
        id, owner, shard, text, channel, zone, anchor, rule, at, repeat, status, due_at,
        bucket, freshness, metadata, source, snoozed_from, version, created_at, updated_at,
        priority, ignore_quiet, alerts, nag, nags
    )
    SELECT
        $7::text, $8::text, $9::smallint, $10::text, $11::text, $12::text,
        $13::text, $14::text, $15::text, $16::text, $17::text, $18::timestamptz,
        $19::integer, $20::integer, $21::json, $22::text, $23::text, $24::integer,
        $25::timestamptz, $26::timestamptz, $28::smallint, $29::boolean, $30::text,
        $31::integer, $32::smallint
    WHERE (SELECT ok FROM room)
    RETURNING *
), waiting AS (
    INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard, saved_at, ring)
    SELECT shard / 64, coalesce(priority, 0), bucket, due_at, id, version, shard,
        clock_timestamp(), {ring}
    FROM saved
    WHERE status = 'pending'
)
SELECT ok, CASE WHEN ok AND $27::text IS NOT NULL THEN pg_notify('tocsin_due', $27::text) END
FROM room

-- name: PENDING_COUNTS
-- How many pending reminders each (owner, app) pair keeps ($1 owners, $2 apps, NULL for the
-- owner himself), among at most $3 of the owner's rows read by reminders_owner. The status is
-- judged outside the read on purpose: a condition on it inside lets the planner join in the
-- partial reminders_due (WHERE status = 'pending'), and without statistics (a new table, no
-- autovacuum yet) it read all of that index for each count — 10 ms a create at 100,000
-- pending rows, against 0.2 ms.
SELECT wanted.owner, wanted.source, (
    SELECT count(*) FILTER (
        WHERE mine.source IS NOT DISTINCT FROM wanted.source AND {waiting}
    )
    FROM (
        SELECT r.id, r.version, r.due_at, r.rule, r.alerts, r.nag, r.status, r.source
        FROM reminders AS r
        WHERE r.owner = wanted.owner LIMIT $3
    ) AS mine
) AS pending
FROM unnest($1::text[], $2::text[]) AS wanted (owner, source)

-- name: _WAITING
-- {waiting} of ADD_REMINDER and PENDING_COUNTS: whether a reminder of the owner's (`mine`)
-- counts as pending: its row says so and, for a one-off, its ring was not claimed (a probe
-- of rings_pkey). A series counts while its row says so, whether or not its last ring
-- went: finding out costs a walk of its rings a row, and a series with an end is rare
-- (it goes once retention removes it).
mine.status = 'pending' AND (mine.rule IS NOT NULL OR mine.alerts IS NOT NULL OR mine.nag IS NOT NULL OR NOT EXISTS (
    SELECT 1 FROM rings AS g
    WHERE (g.due_at, g.reminder_id, g.version) = (mine.due_at, mine.id, mine.version)
))

-- What a reminder is now, worked out from its rings (a template: `queries._ring_state` fills
-- in {table}, the row's alias, {now}, the parameter of the caller's clock, else the
-- database's, {starts}, the instants where the version's newest ring may be, and {place},
-- `_PLACE_RANG` where the last ring a place rang is shown, else NULL). A claim
-- leaves the reminder's row as its last API write made it (`due_at` the occurrence that write
-- scheduled, at `version`); each ring of that version is a row of `rings` naming the
-- occurrence after it (`next_due`, NULL after the last). Rings are kept in due order, with no
-- index by reminder, so the reader is told where to look: {starts} are the latest instants of
-- the version's timeline up to now (`tocsin.store.looking`: worked out from its schedule, a
-- few of them), and the newest of them that rang (a probe of rings_pkey each) is where the
-- walk starts; when none did, it starts at the occurrence the write scheduled. It follows
-- `next_due` through `rings` (a probe a step) to the last ring of the version, the one whose
-- next occurrence has no ring: a step or two past the start, more only while rings claimed
-- since are ahead of the instants given. `next_due` is always later than its ring, so the
-- walk ends. Retention keeps the version's newest ring and what follows it (PRUNE_FIRINGS).
-- Its columns:
-- - `now_status`: the row's own status when it is not `pending` (cancelled; `fired` or
--   `ended` as claims of an earlier release wrote them); else `pending` while an occurrence
--   waits, `fired` (a one-off) or `ended` (a series) after the last ring;
-- - `now_due`: the occurrence that waits, if any;
-- - `last_id`, `last_due_at`, `last_state`: the last ring: the newest of the version's last
--   ring, the last ring of the versions before as the API write that ended them read it
--   (`rang_due_at`), and the last a place rang (`place_triggers.rang_at`), with its firing
--   (a probe of firings_pkey); a ring claimed whose firing is not written yet is shown
--   `sending` (the version's own last ring always: its row stays while the version does; one
--   of before until its deadline, by when its sender or recovery wrote it);
-- - `last_rung`: the due instant of the version's last ring, written or not;
-- - `lost`: no ring of the version was found, neither at an instant given nor at the
--   occurrence the write scheduled: nothing of it rang yet (that occurrence waits), or, when
--   the instants given were not all of the version's up to now, its rings before them were
--   pruned and none rang since (an outage as long as they span): the reader asks again with
--   more (`looking`).

-- name: _RING_STATE
LEFT JOIN LATERAL (
    SELECT max(s.at) AS at FROM unnest({starts}) AS s (at)
    WHERE EXISTS (
        SELECT 1 FROM rings AS g
        WHERE (g.due_at, g.reminder_id, g.version) = (s.at, {table}.id, {table}.version)
    )
) AS newest ON {table}.status = 'pending'
LEFT JOIN LATERAL (
    WITH RECURSIVE chain (due_at, repeat, next_due) AS (
        SELECT g.due_at, g.repeat, g.next_due FROM rings AS g
        WHERE (g.due_at, g.reminder_id, g.version)
            = (coalesce(newest.at, {table}.due_at), {table}.id, {table}.version)
          AND {table}.status = 'pending'
        UNION ALL
        SELECT g.due_at, g.repeat, g.next_due
        FROM chain JOIN rings AS g
            ON (g.due_at, g.reminder_id, g.version)
                = (chain.next_due, {table}.id, {table}.version)
    )
    SELECT due_at, repeat, next_due FROM chain
    WHERE next_due IS NULL OR NOT EXISTS (
        SELECT 1 FROM rings AS g
        WHERE (g.due_at, g.reminder_id, g.version) = (chain.next_due, {table}.id, {table}.version)
    )
) AS rung ON true
CROSS JOIN LATERAL (
    SELECT greatest(rung.due_at, {table}.rang_due_at, {place}) AS shown
) AS last
LEFT JOIN LATERAL (
    SELECT f.reminder_id || '.' || f.due_second AS id, f.due_at, f.state FROM firings AS f
    WHERE (f.due_second, f.reminder_id)
        = (floor(extract(epoch FROM last.shown))::bigint, {table}.id)
) AS written ON true
CROSS JOIN LATERAL (
    SELECT
        CASE
            WHEN {table}.status <> 'pending' OR rung.due_at IS NULL
                OR rung.next_due IS NOT NULL THEN {table}.status
            WHEN {table}.rule IS NULL THEN 'fired'
            ELSE 'ended'
        END AS now_status,
        CASE
            WHEN {table}.status <> 'pending' THEN NULL
            WHEN rung.due_at IS NULL THEN {table}.due_at
            ELSE rung.next_due
        END AS now_due,
        CASE WHEN claimed THEN {table}.id || '.' || floor(extract(epoch FROM last.shown))::bigint
            ELSE written.id END AS last_id,
        CASE WHEN claimed THEN last.shown ELSE written.due_at END AS last_due_at,
        CASE WHEN claimed THEN 'sending' ELSE written.state END AS last_state,
        rung.due_at AS last_rung,
        {table}.status = 'pending' AND newest.at IS NULL AND rung.due_at IS NULL AS lost
    FROM (
        SELECT written.id IS NULL AND (
            (last.shown = rung.due_at AND NOT rung.repeat)
            OR last.shown + make_interval(secs => {table}.freshness)
                > coalesce({now}::timestamptz, clock_timestamp())
        ) AS claimed
    ) AS unwritten
) AS now

-- name: _PLACE_RANG
-- {place} of `_RING_STATE`: when the reminder {table} rang at a place last (a probe of
-- place_triggers_pkey).
(SELECT t.rang_at FROM place_triggers AS t WHERE t.reminder_id = {table}.id)

-- name: GET_REMINDER
-- One reminder's row as its last API write left it (`reminders_now` then works out what its
-- rings say).
SELECT * FROM reminders WHERE id = $1

-- name: LIST_REMINDERS
-- An owner's reminders after a given id, in id order (index reminders_owner), saved by one
-- app when $5, as their rows are: those that may be of status $3 as they are now (a row that
-- is not pending is as it says; a pending one may have rung its last since), all when NULL.
-- `reminders_now` works out the rest.
SELECT * FROM reminders AS r
WHERE r.owner = $1 AND r.id > $2 AND ($5::text IS NULL OR r.source = $5)
  AND ($3::text IS NULL OR r.status = $3 OR r.status = 'pending')
ORDER BY r.id
LIMIT $4

-- name: REMINDERS_NOW
-- The reminders $1 as they are now (`_RING_STATE`), each looked for from its instants $2 (an
-- array's text each), judged at $3 (else the database's clock), in the order asked; a
-- reminder no longer there is left out.
SELECT r.*, now.*
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS wanted (id, starts, n)
JOIN reminders AS r ON r.id = wanted.id
{ring_state}
ORDER BY wanted.n

-- name: UPDATE_REMINDER
-- Replace a reminder's mutable fields while its version is $2 and, when $18 names the
-- occurrence that waited as the caller read it (at minute $19), only by taking it back
-- (`_TAKE_BACK`: a claim that decided it first rang it, and the edit is refused: the caller
-- read a reminder that is no longer so). The new version's occurrence, if any, waits in `due`. Return the
-- reminder as it is now, announcing it ($15: zero or one payload) when it is due soon.
-- $17: priority; $21: whether it ignores quiet hours; $22: its alerts; $23, $24: its nags;
-- $20: the reminder's last ring as the caller read it (its firing written, or on its way), if
-- any, kept in `rang_due_at`: readers of the new version show it until the version rings
-- (`_RING_STATE`), and find no ring of the version before without it. Run in a transaction
-- that rolls back when nothing was saved.
WITH removed AS (
    DELETE FROM due AS d
    USING reminders AS r
    WHERE r.id = $1 AND r.version = $2 AND $18::timestamptz IS NOT NULL
      AND (d.lane, d.rank, d.bucket, d.due_at, d.reminder_id, d.version)
        = (r.shard / 64, coalesce(r.priority, 0), $19::integer, $18, r.id, r.version)
    RETURNING d.due_at, d.reminder_id, d.version
), {take_back}, saved AS (
    UPDATE reminders
    SET text = $3, channel = $4, zone = $5, anchor = $6, rule = $7, at = $8, repeat = $9,
        status = $10, due_at = $11, bucket = $12, freshness = $13, metadata = $14::json,
        version = $2 + 1, updated_at = $16, priority = $17, ignore_quiet = $21,
        alerts = $22, nag = $23, nags = $24,
        rang_due_at = greatest($20::timestamptz, rang_due_at)
    WHERE id = $1 AND version = $2 AND ($18::timestamptz IS NULL OR id IN (SELECT reminder_id FROM taken))
    RETURNING *
), waiting AS (
    INSERT INTO due (
        lane, rank, bucket, due_at, reminder_id, version, shard, saved_at, prev_due, ring
    )
    SELECT shard / 64, coalesce(priority, 0), bucket, due_at, id, version, shard,
        clock_timestamp(), rang_due_at, {ring}
    FROM saved
    WHERE status = 'pending'
)
SELECT saved.*, now.*,
    (SELECT count(pg_notify('tocsin_due', wake)) FROM unnest($15::text[]) AS wake) AS woke
FROM saved
{ring_state}

-- name: CANCEL_REMINDER
-- Cancel a reminder at version $3 by taking back the occurrence that waits, $4 at minute $5
-- (as UPDATE_REMINDER: a claim that decided it first rang it, and the cancel finds nothing
-- to take back), keeping its last ring ($6, as UPDATE_REMINDER's $20); return it as it
-- is now. In a transaction that rolls back when nothing was
-- cancelled.
WITH removed AS (
    DELETE FROM due AS d
    USING reminders AS r
    WHERE r.id = $1 AND r.version = $3
      AND (d.lane, d.rank, d.bucket, d.due_at, d.reminder_id, d.version)
        = (r.shard / 64, coalesce(r.priority, 0), $5::integer, $4::timestamptz, r.id, r.version)
    RETURNING d.due_at, d.reminder_id, d.version
), {take_back}, cancelled AS (
    UPDATE reminders
    SET status = 'cancelled', due_at = NULL, bucket = NULL, version = version + 1,
        updated_at = $2, rang_due_at = greatest($6::timestamptz, rang_due_at)
    WHERE id IN (SELECT reminder_id FROM taken) AND version = $3 AND status = 'pending'
    RETURNING *
)
SELECT cancelled.*, now.* FROM cancelled
{ring_state}

-- name: _TAKE_BACK
-- {take_back} of UPDATE_REMINDER, CANCEL_REMINDER and RESCHEDULE: `taken`, the occurrences
-- the statement takes back. Each one `removed` (its row of `due` deleted, found as the caller
-- read it) is decided here by a `taken` row of `rings` under the occurrence's key, which a
-- claim inserts too: whichever inserts it first wins. A claim that inserted it first rang
-- it, and the occurrence is not taken back (the statement saves nothing, and its
-- transaction rolls back the delete); one in progress is waited for. A claim that comes
-- second finds the key taken and rings nothing.
taken AS (
    INSERT INTO rings (due_at, reminder_id, version, repeat, next_due, taken)
    SELECT due_at, reminder_id, version, false, NULL, true FROM removed
    ON CONFLICT DO NOTHING
    RETURNING due_at, reminder_id, version
)

-- name: MARK_SNOOZED
-- Mark a firing snoozed by a new one-off ($1), once, and say by which: $1 when this marked
-- it, the other one when it was snoozed already, no row when the firing is not written (a
-- ring on its way, its first try not recorded yet). Answered by the row itself, under its
-- lock: read apart, the firing could be written between the two (a snooze that lost to the
-- ring's first write then looked snoozed by nobody), or snoozed by another whose id an
-- older snapshot did not show yet. A firing snoozed already is written again as it was (a
-- refused snooze: rare, and the row's lock is what answers it).
UPDATE firings SET snoozed_by = coalesce(snoozed_by, $1)
WHERE (due_second, reminder_id) = (firing_second($2), split_part($2, '.', 1))
RETURNING snoozed_by

-- -- firings ----------------------------------------------------------------------------------

-- name: MARK_DONE
-- Mark a firing done at $2, once (a second mark keeps the first's instant); the firing.
UPDATE firings SET done_at = coalesce(done_at, $2)
WHERE (due_second, reminder_id) = (firing_second($1), split_part($1, '.', 1))
RETURNING {firing}

-- name: LIST_FIRINGS
-- A reminder's ($1) firings, newest due first, $3 at most: from its last ring ($2, as a reader
-- shows it: `reminders_now`), each ring to the one before it, a probe of rings_pkey (the ring
-- claimed there, of whichever version: its `prev_due`) or, for a ring at a place, of the
-- firing's key a step; a firing id is `<reminder id>.<due epoch second>`. A ring whose firing
-- is not written yet (on its way) is passed, and so is one retention pruned (its row goes
-- only with its firing, when a later ring is there).
WITH RECURSIVE walk (at, step) AS (
    SELECT $2::timestamptz, 1
    UNION ALL
    SELECT before.at, walk.step + 1
    FROM walk CROSS JOIN LATERAL (
        SELECT coalesce(
            (SELECT max(g.prev_due) FROM rings AS g
             WHERE g.due_at = walk.at AND g.reminder_id = $1 AND NOT g.taken),
            (SELECT f.prev_due FROM firings AS f
             WHERE (f.due_second, f.reminder_id)
                 = (floor(extract(epoch FROM walk.at))::bigint, $1))
        ) AS at
    ) AS before
    WHERE before.at < walk.at AND walk.step < 4 * $3
)
SELECT {firing} FROM walk
JOIN firings AS f
    ON (f.due_second, f.reminder_id) = (floor(extract(epoch FROM walk.at))::bigint, $1)
ORDER BY walk.step
LIMIT $3

-- name: LIST_ATTEMPTS
-- The attempts of several firings.
SELECT * FROM attempts WHERE firing_id = ANY($1::text[]) ORDER BY firing_id, number

-- -- contacts ---------------------------------------------------------------------------------

-- name: LIST_CONTACTS
-- One page of an owner's contacts in id order (keyset: those after $2), of one kind when $3,
-- saved by one app when $5.
SELECT * FROM contacts
WHERE owner = $1 AND id > $2 AND ($3::text IS NULL OR kind = $3)
  AND ($5::text IS NULL OR source = $5)
ORDER BY id LIMIT $4

-- name: COUNT_CONTACTS
-- How many contacts of an owner one app saved ($2; NULL: the owner himself), counted up to $3.
SELECT count(*) FROM (
    SELECT 1 FROM contacts WHERE owner = $1 AND source IS NOT DISTINCT FROM $2 LIMIT $3
) AS counted

-- name: LIST_PLACES
-- One page of an owner's places in id order (keyset: those after $2), saved by one app when
-- $4: a range of places_owner.
SELECT * FROM places
WHERE owner = $1 AND id > $2 AND ($4::text IS NULL OR source = $4)
ORDER BY id LIMIT $3

-- name: COUNT_PLACES
-- How many places of an owner one app saved ($2; NULL: the owner himself), counted up to $3.
SELECT count(*) FROM (
    SELECT 1 FROM places WHERE owner = $1 AND source IS NOT DISTINCT FROM $2 LIMIT $3
) AS counted

-- name: PLACE_TRIGGERS_OF
-- The place triggers of the reminders $1 (a probe of place_triggers_pkey each).
SELECT * FROM place_triggers WHERE reminder_id = ANY($1::text[])

-- name: RING_AT_PLACE
-- A crossing's rings, in one statement: each reminder ($1, at version $2) still pending is
-- held (FOR SHARE, in id order, until the statement's transaction ends: an edit or a cancel
-- waits for the crossing, or the crossing for it and then finds it changed, and rings
-- nothing), its trigger marked as MARK_PLACE_RING (sqlite.sql) marks it — of place $3 and
-- event $4, rung at $5 on local day $7, unless it rang since $8 (the crossing less the flap
-- window), today for `once: day`, or ever — and its firing written `queued` for any sender
-- now ($10) as INSERT_PLACE_RING writes it, identity $9, deadline $6. Two takers of one
-- crossing update the same trigger row: the second waits for the first, re-reads the row
-- and finds it rung. The firing names the ring before it (`prev_due`: the trigger's last, or
-- the last of the reminder's versions before, for `LIST_FIRINGS`), as the trigger was before
-- this statement. A `once: ever` reminder that rings here rang its one ring: its
-- occurrence at LATEST goes and its row is `fired` at a new version, as PLACE_DUE_GONE and
-- FIRED_AT_PLACE (sqlite.sql) do, so readers show it fired. Answers the firings written.
WITH ring AS (
    SELECT * FROM unnest(
        $1::text[], $2::integer[], $3::text[], $4::text[], $5::timestamptz[],
        $6::timestamptz[], $7::text[], $8::timestamptz[], $9::text[]
    ) AS ring (reminder_id, version, place_id, event, at, deadline, day, flap_since, firing_id)
), held AS (
    SELECT r.id FROM reminders AS r
    JOIN ring ON (r.id, r.version) = (ring.reminder_id, ring.version)
    WHERE r.status = 'pending'
    ORDER BY r.id
    FOR SHARE OF r
), prior AS (
    SELECT t.reminder_id, t.rang_at FROM place_triggers AS t
    WHERE t.reminder_id IN (SELECT reminder_id FROM ring)
), marked AS (
    UPDATE place_triggers AS t SET rang_at = ring.at, rang_day = ring.day
    FROM ring
    WHERE t.reminder_id = ring.reminder_id AND t.reminder_id IN (SELECT id FROM held)
      AND t.place_id = ring.place_id AND t.event = ring.event
      AND (t.rang_at IS NULL OR (
          coalesce(t.once, '') <> 'ever' AND t.rang_at <= ring.flap_since
          AND (t.once IS NULL OR t.rang_day < ring.day)))
    RETURNING t.reminder_id, t.once
), once_gone AS (
    DELETE FROM due AS d
    USING marked, reminders AS r
    WHERE marked.once = 'ever' AND r.id = marked.reminder_id
      AND (d.lane, d.rank, d.bucket, d.due_at, d.reminder_id, d.version)
        = (r.shard / 64, coalesce(r.priority, 0), r.bucket, r.due_at, r.id, r.version)
), fired AS (
    UPDATE reminders AS r
    SET status = 'fired', due_at = NULL, bucket = NULL, version = r.version + 1,
        updated_at = $10
    FROM marked
    WHERE marked.once = 'ever' AND r.id = marked.reminder_id
)
INSERT INTO firings (
    due_second, reminder_id, owner, shard, due_at, deadline, channel, text, metadata, source,
    state, attempts, next_attempt_at, created_at, priority, prev_due
)
SELECT firing_second(ring.firing_id), r.id, r.owner, r.shard, ring.at, ring.deadline,
    r.channel, r.text, r.metadata, r.source, 'queued', 0, $10, $10, r.priority,
    greatest(prior.rang_at, r.rang_due_at)
FROM marked
JOIN ring ON ring.reminder_id = marked.reminder_id
JOIN reminders AS r ON r.id = marked.reminder_id
LEFT JOIN prior ON prior.reminder_id = marked.reminder_id
ON CONFLICT (due_second, reminder_id) DO NOTHING
RETURNING reminder_id || '.' || due_second AS id

-- name: HOLD_LISTS
-- The lists of $1 that are there, each held (FOR SHARE, in id order) until the transaction
-- that saves a reminder in it ends: a delete of the list (DELETE_LIST) waits for the save,
-- and then finds its reminder to cancel; a save that comes second waits for the delete and
-- then finds no list.
SELECT id FROM lists WHERE id = ANY($1::text[]) ORDER BY id FOR SHARE

-- name: DESTINATIONS
-- Where rings go: the enabled contacts of many (owner, kind) pairs ($1, $2), each pair an
-- index lookup of contacts_owner_kind.
SELECT c.* FROM unnest($1::text[], $2::text[]) AS wanted (owner, kind)
JOIN contacts AS c ON c.owner = wanted.owner AND c.kind = wanted.kind
WHERE c.disabled_reason IS NULL
ORDER BY c.id

-- name: LIST_RINGS
-- Whom rings of many list reminders go to now ($1 reminder ids, $2 their lists): the joined
-- members of each one's list, or its assignee alone when it has one and he joined. An index
-- lookup of list_assignees_pkey and a range of list_members_pkey a reminder.
SELECT w.reminder_id, m.member
FROM unnest($1::text[], $2::text[]) AS w (reminder_id, list_id)
LEFT JOIN list_assignees AS a ON a.reminder_id = w.reminder_id
JOIN list_members AS m ON m.list_id = w.list_id AND m.joined_at IS NOT NULL
  AND (a.assignee IS NULL OR m.member = a.assignee)
ORDER BY w.reminder_id, m.member

-- name: ASSIGNEES_OF
-- The assignees of many reminders ($1), those with one.
SELECT a.* FROM unnest($1::text[]) AS w (reminder_id)
JOIN list_assignees AS a ON a.reminder_id = w.reminder_id

-- name: QUIET_HOURS_OF
-- The quiet hours of many owners ($1), each owner a range of quiet_hours_pkey.
SELECT q.* FROM unnest($1::text[]) AS wanted (owner)
JOIN quiet_hours AS q ON q.owner = wanted.owner
ORDER BY q.owner, q.saver

-- name: IGNORING_QUIET_HOURS
-- Those of the reminders $1 that ring through quiet hours: a primary-key probe each, asked
-- only for bulk rings that quiet hours would hold.
SELECT r.id FROM reminders AS r WHERE r.id = ANY($1::text[]) AND r.ignore_quiet

-- -- apps and secrets -------------------------------------------------------------------------

-- -- metrics --------------------------------------------------------------------------------------

-- {never} of the loads and the queue's counts: the bucket of LATEST, where a reminder that
-- rings at a place waits, in a partition of its own (`due_never`, migration 0031) that no
-- load reads. A constant bound below it prunes that partition when the statement is
-- planned, so each month is still read in key order (a parameter prunes only when the
-- plan runs, and the partition's scan made the planner sort the whole range).

-- name: _SETTLED
-- {settled} of OLDEST_PENDING and COUNT_OVERDUE: the lowest watermark of the parts (-1 while a
-- part never ran): every occurrence before it is decided.
(SELECT CASE WHEN count(*) = count(watermark) THEN coalesce(min(watermark), -1) ELSE -1 END
 FROM leases)

-- name: OLDEST_PENDING
-- The due time of the oldest occurrence waiting: the first undecided entry of each lane and
-- priority of due_pkey (keyed by lane, then priority rank) after the lowest watermark (what
-- lies before it is decided; what was decided after it, not yet tidied, is passed by), then
-- the earliest of those.
SELECT min(first.due_at) FROM generate_series(0, {last_lane}) AS lanes (lane),
    generate_series(0, {last_rank}) AS ranks (rank),
LATERAL (
    SELECT d.due_at FROM due AS d
    WHERE d.lane = lanes.lane AND d.rank = ranks.rank
      AND d.bucket > {settled} AND d.bucket < {never}
      AND NOT EXISTS (
          SELECT 1 FROM rings AS g
          WHERE (g.due_at, g.reminder_id, g.version) = (d.due_at, d.reminder_id, d.version)
      )
    ORDER BY d.bucket, d.due_at
    LIMIT 1
) AS first

-- name: DISABLE_WEBHOOK
UPDATE apps SET webhook_disabled = true WHERE name = $1

-- name: REVOKE_OWNER_TOKENS
-- Only ever later: revoking again never lets back in a token an earlier revocation refused.
-- Draw the line, and tell every API process (delivered at commit): its open feeds of that
-- owner check their credentials at once.
WITH drawn AS (
    INSERT INTO owner_token_revocations (owner, revoked_before) VALUES ($1, $2)
    ON CONFLICT (owner) DO UPDATE
    SET revoked_before = greatest(owner_token_revocations.revoked_before, excluded.revoked_before)
    RETURNING owner
)
SELECT pg_notify('tocsin_revocations', owner) FROM drawn

-- name: RESEAL_APPS
-- A page of re-sealed values written back ($1 keys, $2 values read, $3 new values): only the
-- rows still holding the value read change, one row answered per change made.
UPDATE apps SET webhook_secret = page.new
FROM unnest($1::text[], $2::text[], $3::text[]) AS page (key, old, new)
WHERE apps.name = page.key AND apps.webhook_secret = page.old
RETURNING apps.name

-- name: RESEAL_CONTACTS
UPDATE contacts SET secret = page.new
FROM unnest($1::text[], $2::text[], $3::text[]) AS page (key, old, new)
WHERE contacts.id = page.key AND contacts.secret = page.old
RETURNING contacts.id

-- name: RESEAL_CONTACT_ADDRESSES
UPDATE contacts SET address = page.new
FROM unnest($1::text[], $2::text[], $3::text[]) AS page (key, old, new)
WHERE contacts.id = page.key AND contacts.address = page.old
RETURNING contacts.id

-- name: RESEAL_SHARED_VALUES
UPDATE secrets SET value = page.new
FROM unnest($1::text[], $2::text[], $3::text[]) AS page (key, old, new)
WHERE secrets.name = page.key AND secrets.value = page.old
RETURNING secrets.name

-- -- the scheduler ----------------------------------------------------------------------------

-- Whether an occurrence was decided is a NOT EXISTS of its key in `rings` with an OFFSET 0:
-- an EXISTS with an OFFSET is never made a join or a hashed subplan, so it stays a probe of
-- rings_pkey a row. As either, planned with statistics taken while `rings` was small, it
-- read all of `rings` into a hash for each statement, a plan a prepared statement keeps
-- (tests/integration/store/test_plans.py plans the claim so).

-- name: _LOAD_LANE
-- The occurrences waiting in one lane's bucket range and shard range at one priority, in due
-- order: one range scan of due_pkey, keyed (lane, rank, bucket, due_at, reminder_id, version)
-- — the lane $9 and the priority rank {rank} first, then reading order — that tests the
-- shard range on each entry and reads no other lane's or priority's entry; only those after
-- (bucket, due_at, reminder_id) = ($8, $6, $7): the next page, which starts where the last
-- one stopped (a first page passes the range's first bucket and an instant before any).
-- Up to ($2, $10): the range's last bucket, and in it no row due after $10 (the sweep reads
-- only what is due by now; reading ahead passes the bucket's end), a bound of the scan
-- itself, so the rows after it are never read.
-- Each with what its ring says, where it goes and when its reminder rings next, as `content`:
-- one JSON object (`_RING_CONTENT`), which the scheduler reads its schedule from and passes
-- on to CLAIM as it is, so that the claim reads no row of `reminders`. It is the
-- occurrence's own (`ring`, written with it by the API write or the claim that scheduled it,
-- from the version it is of), so a minute's load reads only the minute's pages: its entries
-- of due_pkey and its rows of `due`. Read from its reminder's row instead (`_SAID`) only for
-- an occurrence saved without it (by a release before migration 0038, or the trigger that
-- keeps the writes of a release before 0021), at the occurrence's version (every API write
-- that changes the row takes its occurrence back in the same transaction, so the two always
-- agree). A reminder's row read for each ring was a leaf of `reminders_pkey` and a heap page
-- that no other ring of its minute shared: in a minute among a hundred times as many
-- reminders, 22 µs of the database's CPU a ring, where the occurrence's own costs 7
-- (docs/benchmarks.md, "What a ring says, with its occurrence").
-- An occurrence a claim or an API write decided stays in `due` until its minute is tidied
-- (TIDY_DUE), and is passed by: a probe of rings_pkey by its key, among the minute's own pages.
-- The cursor is always given, never `$6 IS NULL OR …`: the generic plan a prepared statement
-- switches to after five runs cannot drop that OR, so the cursor became a filter, and each
-- page read the bucket again from its start, a heap fetch for every row before the cursor
-- (a million rings in a minute: 12.5 million buffers over 2.35 million rows loaded, p99
-- 121 s; docs/benchmarks.md, "The packed minute, bisected").
SELECT d.reminder_id AS id, d.due_at, d.version, d.rank AS priority,
    coalesce(d.ring, r.content) AS content, d.prev_due, d.bucket
FROM due AS d {said}
WHERE d.lane = $9::integer + {offset} AND d.rank = {rank}
  AND coalesce(d.ring, r.content) IS NOT NULL
  AND d.bucket >= $1 AND d.bucket < {never} AND d.shard BETWEEN $3 AND $4
  AND (d.bucket, d.due_at, d.reminder_id) > ($8::integer, $6::timestamptz, $7::text)
  AND (d.bucket, d.due_at) <= ($2::integer, $10::timestamptz)
  AND NOT EXISTS (
      SELECT 1 FROM rings AS g
      WHERE (g.due_at, g.reminder_id, g.version) = (d.due_at, d.reminder_id, d.version)
      OFFSET 0  -- a probe a row, never a join (see above _LOAD_LANE)
  )
ORDER BY d.bucket, d.due_at, d.reminder_id
LIMIT $5

-- name: _LOAD_SAVED_LANE
-- The sweep's read of one lane at one priority (as _LOAD_LANE): the occurrences API writes
-- saved after $6 (`saved_at`, the database's clock; a range scan of the partial index
-- due_saved, which holds only what API writes saved, never a claim's next occurrence), in
-- the part's shard range, in buckets up to $2 and in that one due by $7 at the latest (what
-- reading ahead has passed: what lies after it is read in its turn, and a sweep that read
-- it read a busy minute's rows saved lately every round), not decided since. In due order,
-- $5 at most.
SELECT d.reminder_id AS id, d.due_at, d.version, d.rank AS priority,
    coalesce(d.ring, r.content) AS content, d.prev_due, d.bucket
FROM due AS d {said}
WHERE d.lane = $1::integer + {offset} AND d.rank = {rank}
  AND coalesce(d.ring, r.content) IS NOT NULL
  AND d.saved_at > $6::timestamptz AND d.saved_at IS NOT NULL
  AND d.shard BETWEEN $3 AND $4 AND (d.bucket, d.due_at) <= ($2::integer, $7::timestamptz)
  AND d.bucket < {never}
  AND NOT EXISTS (
      SELECT 1 FROM rings AS g
      WHERE (g.due_at, g.reminder_id, g.version) = (d.due_at, d.reminder_id, d.version)
      OFFSET 0  -- a probe a row, never a join (see above _LOAD_LANE)
  )

-- name: _RING_CONTENT
-- What a ring of the reminder {table} says, where it goes and when the reminder rings next,
-- as one JSON object (the metadata as the text it is stored as): an occurrence's `ring`,
-- which the load reads (`codec.due_ring_of` its schedule) and CLAIM reads by name.
json_build_object(
    'owner', {table}.owner, 'shard', {table}.shard, 'channel', {table}.channel,
    'text', {table}.text, 'metadata', {table}.metadata::text, 'source', {table}.source,
    'priority', {table}.priority, 'freshness', {table}.freshness,
    'rang_due_at', {table}.rang_due_at, 'zone', {table}.zone, 'anchor', {table}.anchor,
    'rule', {table}.rule, 'alerts', {table}.alerts, 'nag', {table}.nag, 'nags', {table}.nags
)::text

-- name: _SAID
-- {said} of _LOAD_LANE and _LOAD_SAVED_LANE: what a ring of an occurrence saved without it
-- says (`_RING_CONTENT`), from its reminder's row at its version. A subquery kept apart
-- (OFFSET 0), so that its condition on the occurrence alone is a filter of the subquery's
-- own, tested before the read, which it spares every occurrence that holds its `ring`
-- (pulled up into the join, it was a condition of the join, tested after the read).
LEFT JOIN LATERAL (
    SELECT {content} AS content FROM reminders AS r
    WHERE d.ring IS NULL AND r.id = d.reminder_id AND r.version = d.version
    OFFSET 0
) AS r ON true

-- name: RING_CONTENTS
-- The reminders $1 (ids) with what a ring of each says and where it goes, as a load reads
-- it for their claims (`_RING_CONTENT`), by id: for a claim made outside the scheduler (the
-- benchmarks' own).
SELECT r.id, {content} AS content FROM reminders AS r WHERE r.id = ANY($1::text[]) ORDER BY r.id

-- name: _LOAD_DUE
-- Pending reminders of a part that spans several lanes or priorities: the {branches}, one
-- `_LOAD_LANE` scan per lane and priority, merged (a Merge Append, which stops at the limit).
-- `queries.load_due` builds it; `queries.load_saved` the sweep's, of `_LOAD_SAVED_LANE`.
SELECT id, due_at, version, priority, content, prev_due
FROM ({branches}) AS due
ORDER BY bucket, due_at, id LIMIT $5

-- How the scheduler's writes (CLAIM, RECORD_ATTEMPTS) are planned: with nothing set, each sent
-- alone (a transaction of its own, one round trip). Each joins its batch (one JSON array of
-- rows, `jsonb_array_elements`) to its table by the primary key alone, and compares the row's state with a value of the batch —
-- the status each reminder was loaded in, the state each firing was handed out in — never
-- with a constant. A partial index serves a query only when the query's own conditions on
-- the table prove its predicate, and a value known only when the batch is read proves
-- nothing: reminders_due and firings_sending cannot be chosen, whatever the statistics say.
-- With no condition on the table but the join, the plan is a Nested Loop from the batch into
-- the primary key, one lookup per batch row, which locks the rows in the batch's order (a
-- claim batch comes sorted by id); the only other is to read the table whole once, which
-- the planner takes only for a small table (below ~100,000 rows), where it costs as little.
-- The plan made for a batch's arguments and the generic plan are the same, so a prepared
-- statement may switch to the generic plan and skip planning (0.5-0.6 ms a batch).
--
-- What the statements looked like before, and what each planner setting they ran under did
-- (measured with `tocsin bench plans`): docs/storage.md, "Planner settings".

-- name: LOAD_PLANNING
-- How `load_due` is planned: in its own transaction, with sorting off, and nothing else
-- forced. Keyed by lane, the index gives a part only its own rows whatever the planner picks
-- (no sequential scan or parallel plan came up, fresh statistics or stale), but with fresh
-- statistics of a busy minute the planner prefers a bitmap scan and a sort to the index's
-- order, because the rows of a lane lie scattered over the heap, and reads the part's whole
-- minute for every page (docs/storage.md, "The hot paths", has the measurement). Sorting off
-- leaves the index's order the one plan that needs no sort.
SET LOCAL enable_sort = off

-- name: CLAIM
-- Claim a batch in one statement: $1 is the batch, one JSON array of rows, each a claim, read
-- by name: {claim_fields} is the select list of `batches.POSTGRES_CLAIMS`, which declares
-- their order.
-- A claim reads no row of `reminders`: what its ring says and where it goes (`content`: the
-- owner, shard, channel, text, metadata, source, priority, freshness and `rang_due_at` of
-- the version loaded) came with the load (`_LOAD_LANE`), and `keyed` reads it by name.
-- `taken` keeps each claim whose occurrence is still undecided: no row of `rings` has its key
-- (the occurrence the loader read: its due instant, reminder and version; one probe of
-- rings_pkey, among the minute's own pages). The claim's insert of its ring under that key
-- is what decides it; the occurrence's row of `due` is left as it is (its page lies among
-- whatever was saved with it, and writing it cost a full-page image a ring on a table of
-- long standing). Every API write that changes a reminder (an edit, snooze, cancel, rezone)
-- takes its waiting occurrence back by inserting a `taken` row under the same key in the
-- same transaction (`_TAKE_BACK`), so an occurrence with no row is of the version its
-- reminder is at, with the content loaded; of two inserts of one key, the first wins, and
-- the second waits for its transaction: a claim whose ring meets a key inserted since its
-- snapshot fails with a unique violation and is tried again (`store.claim`), when this
-- probe passes it by (the scheduler rings the new version instead).
-- With $5 (the part count) set, a claim applies only while its part's lease is held by the
-- sender $3 at the epoch the sender believes it holds (the row's `epoch`): a worker whose
-- lease ran out and was taken over changes nothing (the fencing token). Each claim taken
-- becomes a row of `rings` naming the occurrence after it (`next_due`: a series' next,
-- computed from the rule of that version; NULL for a one-off or a finished series), which
-- waits in `due` in its turn, with the content loaded (what it says is the version's). A ring rings once under its delivery identity (`<reminder
-- id>.<due epoch second>`, made here: tocsin.ids.firing_id): one rung already, by another
-- version (a series edited back to an instant that rang) or by a claim of an earlier
-- release (its firing written; probed only for a reminder whose row says a ring of it went
-- before, `rang_due_at`), is a `repeat`: it rings no more, and its series goes on. The ring
-- is a plain insert (ON CONFLICT's speculative insertion was a WAL record and its CPU a
-- ring); and as every claim `moved` keeps is inserted, what follows reads `moved`, never
-- the insert's answer. (It read `decided`'s RETURNING by (reminder, due instant), which the
-- planner, estimating one row for each CTE, joined as a nested loop: half a million
-- comparisons a batch of 1,000, 280 ms of its 295: docs/benchmarks.md, "The claim's
-- quadratic join, and its reminder read".)
-- A claim with an `error` records a ring that could not be planned: `failed`, with the
-- error as its last_error. $2: now; $4: the sender's hold.
--
-- A ring to send is not written here (`stored` false): its firing is written once, with the
-- outcome of its first try (INSERT_FIRINGS, which deletes the claim with its last firing),
-- and until then the rings of the batch wait, as arrays in one row, in `claimed_rings`
-- under the sender's hold: each ring's reminder, due instant, and the route and freshness
-- it was claimed with (where it goes and by when are fixed here, whatever an edit changes
-- before its firing is written), and the batch's oldest due instant, by which retention
-- finds the claims that may owe a ring to a reminder it would delete; the claim's id is
-- every row's `claim`. A claim whose sender never writes them all is found by its hold
-- (RECOVER_CLAIMS). Written here are the rings with nothing to send now: `failed` and
-- `expired` ones, and the in-app feed's (below).
--
-- A ring for the in-app feed alone is not a worker's to send: its firing is inserted
-- `queued` until its deadline (with the note $6), for a page to take (MARK_FEED_SENT) or
-- pickup to expire, and announced here to the API processes' feeds (NOTIFY, delivered at
-- commit: a claim that rolled back announces nothing; payloads of at most 40 rings, each
-- line at most ~170 bytes, under NOTIFY's 8,000; `codec.parse_feed_payload` reads them).
-- A page then has it as soon as the claim commits, with no delivery round in between.
WITH claim AS (
    SELECT {claim_fields}
    FROM jsonb_array_elements($1::jsonb) AS c
), keyed AS MATERIALIZED (
    SELECT claim.*, ring.*, ring.shard / 64 AS lane, coalesce(ring.priority, 0) AS rank
    FROM claim CROSS JOIN LATERAL (
        SELECT content->>'owner' AS owner, (content->>'shard')::smallint AS shard,
            content->>'channel' AS channel, content->>'text' AS text,
            (content->>'metadata')::json AS metadata, content->>'source' AS source,
            (content->>'priority')::smallint AS priority,
            (content->>'freshness')::integer AS freshness,
            (content->>'rang_due_at')::timestamptz AS rang_due_at
    ) AS ring
), taken AS (
    SELECT claim.* FROM keyed AS claim
    WHERE NOT EXISTS (
        SELECT 1 FROM rings AS g
        WHERE (g.due_at, g.reminder_id, g.version)
            = (claim.due_at, claim.reminder_id, claim.version)
        OFFSET 0  -- a probe a row, never a join (see above _LOAD_LANE)
      )
      AND ($5::integer IS NULL OR EXISTS (
          SELECT 1 FROM leases AS l
          WHERE l.parts = $5 AND l.part = claim.part AND l.holder = $3
            AND l.epoch = claim.epoch
      ))
), moved AS (
    SELECT reminder_id || '.' || floor(extract(epoch FROM due_at))::bigint AS firing_id,
        reminder_id, owner, shard, version, due_at,
        due_at + make_interval(secs => freshness) AS deadline, channel, text, metadata,
        source,
        CASE WHEN state = 'sending' AND channel = 'inapp' THEN 'queued' ELSE state END
            AS state,
        CASE WHEN state = 'sending' AND channel = 'inapp' THEN $6 ELSE error END AS error,
        state = 'sending' AND channel = 'inapp' AS feed, priority, freshness, next_due_at,
        next_bucket, prev_due, content, EXISTS (
            SELECT 1 FROM rings AS g
            WHERE g.due_at = taken.due_at AND g.reminder_id = taken.reminder_id
              AND NOT g.repeat AND NOT g.taken
            OFFSET 0  -- a probe a row, never a hash of the table (see above _LOAD_LANE)
        ) OR (
            rang_due_at IS NOT NULL AND EXISTS (
                SELECT 1 FROM firings AS f
                WHERE (f.due_second, f.reminder_id)
                    = (floor(extract(epoch FROM taken.due_at))::bigint, taken.reminder_id)
            )
        ) AS repeat
    FROM taken
), decided AS (
    INSERT INTO rings (due_at, reminder_id, version, repeat, next_due, prev_due)
    SELECT due_at, reminder_id, version, repeat, next_due_at, prev_due FROM moved
), waiting AS (
    INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard, prev_due, ring)
    SELECT shard / 64, coalesce(priority, 0), next_bucket, next_due_at, reminder_id, version,
        shard, due_at, content::text
    FROM moved
    WHERE next_due_at IS NOT NULL
    ON CONFLICT DO NOTHING
), ring AS (
    SELECT moved.*, state <> 'sending' AS stored FROM moved WHERE NOT repeat
), announced AS (
    SELECT count(pg_notify('tocsin_feed', payload)) AS notifications
    FROM (
        SELECT string_agg(owner || ' ' || firing_id, E'
') AS payload
        FROM (
            SELECT owner, firing_id, (row_number() OVER ()) / 40 AS chunk
            FROM ring WHERE feed
        ) AS rings
        GROUP BY chunk
    ) AS payloads
), held AS (
    INSERT INTO claimed_rings (
        hold_until, sender, reminder_ids, due_ats, routes, freshness, oldest_due
    )
    SELECT $4, $3, array_agg(reminder_id), array_agg(due_at), array_agg(channel),
        array_agg(freshness), min(due_at)
    FROM ring WHERE NOT stored
    HAVING count(*) > 0
    RETURNING id
), written AS (
    INSERT INTO firings (
        due_second, reminder_id, owner, shard, due_at, deadline, channel, text, metadata,
        source, state, attempts, next_attempt_at, created_at, last_error, priority
    )
    SELECT floor(extract(epoch FROM due_at))::bigint, reminder_id, owner, shard, due_at,
        deadline, channel, text, metadata, source, state, 0,
        CASE WHEN feed THEN deadline WHEN state = 'queued' THEN $2::timestamptz END,
        $2, error, priority
    FROM ring CROSS JOIN announced
    WHERE stored
    ON CONFLICT (due_second, reminder_id) DO NOTHING
    RETURNING reminder_id || '.' || due_second AS id
)
SELECT firing_id, reminder_id, owner, shard, due_at, deadline, channel, text, metadata, source,
    state, error, priority, stored, (SELECT id FROM held) AS claim
FROM ring
WHERE NOT stored OR firing_id IN (SELECT id FROM written)

-- name: _INSERT_FIRINGS
-- Write, once, the firings of rings a claim did not write (`stored` false in CLAIM), each
-- with the outcome of its first try, and that try's attempts where the firing row cannot
-- hold it (as RECORD_ATTEMPTS does: a first try accepted with nothing to say on the firing's
-- own channel is `sent_to` on the row). {conflict} is empty on the common path: a plain
-- INSERT writes no speculative-insertion record (ON CONFLICT's, 48 bytes a row), and a batch
-- that meets a firing written meanwhile fails whole and is written again with
-- `INSERT_FIRINGS_AFTER_RECOVERY`. $1 is the batch, one JSON array of rows, each a firing
-- with the outcome of its first try, read by name ({firing_fields}: the select list of
-- `batches.POSTGRES_UNWRITTEN`, which declares their order; `route` is the firing's channel,
-- `channel` the try's); $2 the earlier attempts ({earlier}); $3 the claims this write
-- settles (their last unwritten firings are in the batch: `claims.ClaimLedger` counts them),
-- whose rows go, so that recovery never reads them. Return how many were written.
WITH settled AS (
    DELETE FROM claimed_rings WHERE id = ANY($3::bigint[])
), result AS (
    SELECT {firing_fields}
    FROM jsonb_array_elements($1::jsonb) AS r
), written AS (
    INSERT INTO firings AS f (
        due_second, reminder_id, owner, shard, due_at, deadline, channel, text, metadata,
        source, state, attempts, next_attempt_at, sent_at, provider_id, last_error, sent_to,
        created_at, priority
    )
    SELECT firing_second(firing_id), reminder_id, owner, shard, due_at, deadline, route, text,
        metadata::json, source, state, coalesce(number, 0),
        CASE WHEN state = 'queued' THEN coalesce(next_attempt_at, at, created_at) END,
        CASE WHEN state = 'sent' THEN coalesce(at, clock_timestamp()) END,
        provider_id, last_error, CASE WHEN route = channel THEN sent_to END, created_at,
        priority
    FROM result
    {conflict}
    RETURNING f.reminder_id || '.' || f.due_second AS id, f.sent_to IS NOT NULL AS on_row
), recorded AS (
    INSERT INTO attempts (firing_id, number, at, channel, outcome, error, provider_id, destination)
    SELECT result.firing_id, number, at, channel, outcome, error, provider_id, destination
    FROM result JOIN written ON written.id = result.firing_id
    WHERE number IS NOT NULL  -- expired before its turn: no attempt was made
      AND NOT written.on_row
    UNION ALL
    SELECT firing_id, number, at, channel, outcome, error, provider_id, destination
    FROM ({earlier}) AS earlier
    WHERE earlier.firing_id IN (SELECT id FROM written)
    ON CONFLICT (firing_id, number) DO NOTHING
)
SELECT count(*) FROM written

-- name: _AFTER_RECOVERY
-- {conflict} of INSERT_FIRINGS_AFTER_RECOVERY, the same, for a batch in which some firing is written already: by RECOVER_CLAIMS, when the
-- sender's hold ran out before its results were written, or by an earlier try of this very
-- write that committed but whose answer was lost. A result still applies to a firing that
-- RECOVER_CLAIMS wrote and no sender has taken since (`queued`, untried): the ring was sent
-- by its first sender after all, and is not sent again. Anything else keeps what it holds.
-- The try's destination goes on the row only when the firing is on the route it was tried
-- on (one recovered from a claim that kept no route is on the row's route of then): else it
-- is an attempts row, named by its own channel.
ON CONFLICT (due_second, reminder_id) DO UPDATE
    SET state = excluded.state, attempts = excluded.attempts,
        next_attempt_at = excluded.next_attempt_at, sent_at = excluded.sent_at,
        provider_id = excluded.provider_id, last_error = excluded.last_error,
        sent_to = CASE WHEN f.channel = excluded.channel THEN excluded.sent_to END
    WHERE f.state = 'queued' AND f.attempts = 0 AND f.sender IS NULL AND f.sent_at IS NULL

-- name: _UNLESS_WRITTEN
-- {conflict} of INSERT_FIRINGS_UNLESS_WRITTEN, the same, for rings handed back unsent (`release_deliveries`): one written already — by
-- `RECOVER_CLAIMS`, or by this very release tried before — keeps what it holds.
ON CONFLICT (due_second, reminder_id) DO NOTHING

-- name: _EARLIER_ATTEMPTS
-- {earlier} of INSERT_FIRINGS and RECORD_ATTEMPTS: the attempts of the batch's rounds at other
-- destinations of the same firings, $2 (one JSON array of rows, nearly always empty), read by
-- name: {attempt_fields} is the select list of `batches.POSTGRES_EARLIER`, which declares
-- their order.
SELECT {attempt_fields}
FROM jsonb_array_elements($2::jsonb) AS e

-- name: FORGET_CLAIMS
-- Delete claims whose firings are all written ($1: their ids), which the write of their last
-- firing did not: two writes of one claim's last firings at once (`claims.ClaimLedger`).
DELETE FROM claimed_rings WHERE id = ANY($1::bigint[])

-- name: RECOVER_CLAIMS
-- Write, `queued` for any sender now ($1), the rings of up to $2 claims whose sender's hold
-- ran out before it wrote their firings, and forget those claims. Each claim is taken by one
-- caller (SKIP LOCKED); a ring whose firing is written (nearly all: their sender wrote them)
-- is left as it is. The firing goes where the claim sent it and keeps its deadline: the
-- route and freshness the claim kept (a claim of a release before 0019 kept neither: the
-- row's then), at the due instant it rang, so an edit since then cannot send the same
-- identity somewhere else or past the deadline its sender had. Its words are the row's as
-- it is now.
WITH stale AS (
    DELETE FROM claimed_rings
    WHERE ctid = ANY(ARRAY(
        SELECT ctid FROM claimed_rings WHERE hold_until < $1
        ORDER BY hold_until LIMIT $2
        FOR UPDATE SKIP LOCKED
    ))
    RETURNING reminder_ids, due_ats, routes, freshness
), ring AS (
    SELECT held.reminder_id, held.due_at, held.route, held.freshness
    FROM stale,
        unnest(stale.reminder_ids, stale.due_ats, stale.routes, stale.freshness)
            AS held (reminder_id, due_at, route, freshness)
), written AS (
    INSERT INTO firings (
        due_second, reminder_id, owner, shard, due_at, deadline, channel, text, metadata,
        source, state, attempts, next_attempt_at, created_at, last_error, priority
    )
    SELECT floor(extract(epoch FROM ring.due_at))::bigint, r.id, r.owner, r.shard, ring.due_at,
        ring.due_at + make_interval(secs => coalesce(ring.freshness, r.freshness)),
        coalesce(ring.route, r.channel), r.text, r.metadata, r.source, 'queued', 0, $1, $1,
        'its sender did not record it before its hold ran out: sent again', r.priority
    FROM ring JOIN reminders AS r ON r.id = ring.reminder_id
    WHERE NOT EXISTS (
        SELECT 1 FROM firings AS f
        WHERE (f.due_second, f.reminder_id)
            = (floor(extract(epoch FROM ring.due_at))::bigint, ring.reminder_id)
    )
    ON CONFLICT (due_second, reminder_id) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM written

-- name: TAKE_DELIVERIES
-- Hand firings that need a sender to the caller: `queued` whose retry time came, or `sending`
-- whose sender's lease ran out — urgent ones first (priority NULL), then closest deadline
-- first, so a backlog goes out in the order it goes stale. Each kind is a range scan of its
-- partial index (firings_queued on next_attempt_at, firings_sending on lease_until) over what
-- is due now, then sorted by priority and deadline: an index keyed by deadline would instead
-- be read across every firing not due yet (all the retries waiting out an outage) to find
-- the due ones. Rows another caller is taking are skipped (SKIP LOCKED), so each goes to one
-- caller. Those past their deadline ($1 = now) become `expired` instead, up to $4 of them
-- per call, taken apart from the fresh ones, which they would otherwise crowd out of the
-- limit by sorting first. The rows taken are updated by their row address (`ctid =
-- ANY(ARRAY(…))`, a TID scan): joined to the CTE instead, the planner hashed the whole table
-- when it expected a few hundred candidates. Planned under
-- TAKE_PLANNING.
WITH overdue AS (
    SELECT ctid FROM firings
    WHERE ((state = 'queued' AND next_attempt_at <= $1)
           OR (state = 'sending' AND lease_until < $1))
      AND deadline <= $1
      AND shard BETWEEN $2 AND $3
    LIMIT $4
    FOR UPDATE SKIP LOCKED
), expired AS (
    UPDATE firings AS f
    SET state = 'expired', sender = NULL, lease_until = NULL, next_attempt_at = NULL,
        last_error = 'expired: its deadline passed before it could be sent'
            || coalesce(' (last error: ' || f.last_error || ')', '')
    WHERE f.ctid = ANY(ARRAY(SELECT ctid FROM overdue))
), candidate AS (
    SELECT ctid FROM firings
    WHERE ((state = 'queued' AND next_attempt_at <= $1)
           OR (state = 'sending' AND lease_until < $1))
      AND deadline > $1
      AND shard BETWEEN $2 AND $3
    ORDER BY priority NULLS FIRST, deadline
    LIMIT $4
    FOR UPDATE SKIP LOCKED
)
UPDATE firings AS f
SET state = 'sending', sender = $5, lease_until = $6, next_attempt_at = NULL
WHERE f.ctid = ANY(ARRAY(SELECT ctid FROM candidate))
RETURNING {firing}

-- name: TAKE_PLANNING
-- How TAKE_DELIVERIES is planned: in its own transaction, with sequential scans off. A
-- prepared statement keeps the generic plan it switched to after five runs, and one made
-- while `firings` was small (a new database, statistics read before a burst) read the whole
-- table: in a burst whose rings are all sent at once, every delivery round of every worker
-- read the firings written so far and found none (a million rings in a minute: 400 rounds,
-- 2.2 million buffers, a fifth of the database's time; docs/benchmarks.md, "The sweep reads
-- what is due"). The partial indexes hold only what waits or is being sent; their scans
-- cost nothing when the table is small.
SET LOCAL enable_seqscan = off

-- name: RECORD_ATTEMPTS
-- Move firings on after one round of attempts each (or none: `number` NULL), each found by its
-- id, only while the reporting sender still holds it (in the state it was handed out in:
-- `sending`), and record each attempt: the round's last with its result ($1, one JSON array
-- of rows, each a result and the state its firing was handed out in, read by name:
-- {result_fields} is the select list of `batches.POSTGRES_RESULTS`, which declares their
-- order; `last_error` is the firing's, `error` the attempt's), the others (at other
-- destinations of the same firing) from $2 ({earlier}). A
-- first try accepted with nothing to say (`sent_to`: its destination, else NULL) on the
-- firing's own channel stays on the firing row and writes no attempts row: one row write
-- instead of two for the common ring. A batch names each firing once (the store sends the
-- first result of each). Return how many applied.
WITH result AS (
    SELECT {result_fields}
    FROM jsonb_array_elements($1::jsonb) AS r
), finished AS (
    UPDATE firings AS f
    SET state = result.state,
        attempts = coalesce(result.number, f.attempts),
        next_attempt_at = CASE
            WHEN result.state = 'queued' THEN coalesce(result.next_attempt_at, result.at)
        END,
        sender = NULL,
        lease_until = NULL,
        sent_at = CASE
            WHEN result.state = 'sent' THEN coalesce(result.at, clock_timestamp())
            ELSE f.sent_at
        END,
        provider_id = coalesce(result.provider_id, f.provider_id),
        last_error = result.last_error,
        sent_to = CASE WHEN f.channel = result.channel THEN result.sent_to END
    FROM result
    WHERE (f.due_second, f.reminder_id)
            = (firing_second(result.firing_id), split_part(result.firing_id, '.', 1))
      AND (f.state, f.sender) = (result.held_state, result.sender)
    RETURNING result.*, f.sent_to IS NOT NULL AS on_row
), recorded AS (
    INSERT INTO attempts (firing_id, number, at, channel, outcome, error, provider_id, destination)
    SELECT firing_id, number, at, channel, outcome, error, provider_id, destination
    FROM finished
    WHERE number IS NOT NULL  -- expired before its turn: no attempt was made
      AND NOT on_row
    UNION ALL
    SELECT firing_id, number, at, channel, outcome, error, provider_id, destination
    FROM ({earlier}) AS earlier
    WHERE earlier.firing_id IN (SELECT firing_id FROM finished)
    ON CONFLICT (firing_id, number) DO NOTHING
)
SELECT count(*) FROM finished

-- name: SETTLED_DESTINATIONS
-- The destinations a firing's ($1) attempts settled for good (its attempts are found by the
-- primary key's prefix), with a first try kept on the firing row (a probe of its key);
-- `channel:<name>` for an attempt that found its channel with no destination.
SELECT coalesce(destination, 'channel:' || channel) AS destination, outcome FROM attempts
WHERE firing_id = $1 AND outcome <> 'retry'
UNION ALL
SELECT sent_to, 'sent' FROM firings
WHERE (due_second, reminder_id) = (firing_second($1), split_part($1, '.', 1))
  AND sent_to IS NOT NULL

-- name: _BY_IDS
-- {by_ids} of RELEASE_DELIVERIES and MARK_FEED_SENT: the firings whose ids are $1, each found
-- by a probe of the key its id names and locked (so that its address is its newest
-- version's: a write may have moved it since the statement's snapshot), by their address.
ctid = ANY(ARRAY(
    SELECT probe.ctid FROM unnest($1::text[]) AS k
    CROSS JOIN LATERAL (
        SELECT ctid FROM firings
        WHERE (due_second, reminder_id) = (firing_second(k), split_part(k, '.', 1))
        OFFSET 0  -- a probe of the key an id, never a hash of the table
        FOR UPDATE  -- held: its address stays its newest version's
    ) AS probe
))

-- name: _RELEASE_DELIVERIES
-- Hand firings back unsent ($1, their ids; $3 = now): still `sending` held by $2, they become
-- `queued` for any taker at once ({by_ids}).
UPDATE firings
SET state = 'queued', next_attempt_at = $3, sender = NULL, lease_until = NULL
WHERE {by_ids}
  AND state = 'sending' AND sender = $2

-- -- leases -----------------------------------------------------------------------------------

-- name: RENEWAL_TIMEOUT
-- A renewal whose worker stops inside it (paused, cut off from the network) is ended by the
-- server once it has sent nothing for $1 (milliseconds, half the lease), which releases the
-- turn (LOCK_RENEWALS) and the lease rows it locked: without it, the turn stayed taken until
-- that session's connection closed, and no worker renewed or took over anything meanwhile,
-- its own parts included. A renewal's statements follow each other at once, so a healthy
-- one never waits that long between two. The server ends only a session idle in its
-- transaction, though, not one stopped between two messages of a statement (END_STALLED_TURN
-- ends those); and a renewal waits at most $2 (twice $1) for a lock, so that one that came
-- just as such a holder stopped fails, and the next ends the holder, rather than waiting for
-- it as long as it is stopped.
SELECT set_config('idle_in_transaction_session_timeout', $1::text, true),
    set_config('lock_timeout', $2::text, true)

-- name: TRY_TURN
-- The renewals' turn (LOCK_RENEWALS) if it is free now, as it is but for a moment: whether
-- it was taken.
SELECT pg_try_advisory_xact_lock(119182682449267)

-- name: END_STALLED_TURN
-- End the session holding the renewals' turn if it has waited for its worker for longer than
-- $1 (milliseconds, half the lease): a worker stopped (SIGSTOP, cut off) between two messages
-- of a statement. asyncpg sends a statement new to its connection as Parse, Describe and
-- Flush, and its Bind, Execute and Sync once answered; in between, the server counts the
-- session active, not idle in its transaction, so its timeout (RENEWAL_TIMEOUT) never ends
-- it, and it held the turn and its locked lease rows until its connection closed (a worker
-- paused in an end-to-end test under load: the other's renewals waited for the turn, and its
-- leases ran out too). Only a session this role may end is (`pg_terminate_backend`).
SELECT count(*) FILTER (WHERE pg_terminate_backend(a.pid))
FROM pg_locks AS l
JOIN pg_stat_activity AS a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.database = a.datid
  AND a.datname = current_database()
  AND (l.classid::bigint << 32) + l.objid::bigint = 119182682449267 AND l.objsubid = 1
  AND a.wait_event_type = 'Client' AND a.wait_event IN ('ClientRead', 'ClientWrite')
  AND a.state_change < clock_timestamp() - ($1::text || ' ms')::interval
  AND pg_has_role(a.usesysid, 'USAGE')

-- name: LOCK_RENEWALS
-- Renewals take turns (released at commit), so that each counts the live workers with the
-- heartbeats of those renewing beside it: two renewing at once (both back after an outage)
-- each counted one live worker, and held the half that the other's locked rows left it
-- ("holding 8 of 16 parts (1 live workers)"). Waited for only when TRY_TURN found it taken.
SELECT pg_advisory_xact_lock(119182682449267)  -- "leases" in ASCII

-- name: DATABASE_NOW
-- Leases are judged by the database's clock, never a worker's: a worker whose clock is off
-- neither takes a live lease nor keeps a dead one. (clock_timestamp(), not now(): the
-- renewal's own moment, however long its transaction waited for a lock.)
SELECT clock_timestamp()

-- name: READ_ONLY
-- Whether this server cannot take writes: a standby (in recovery), or one set read-only (as
-- a fenced or draining primary may be). Readiness asks it, so that a process whose pool
-- still reaches a server that was demoted says why it does nothing.
SELECT pg_is_in_recovery() OR current_setting('transaction_read_only')::boolean

-- name: LEASES_CHANGED
-- Tell every worker that parts were let go or a worker joined, so that they renew at once
-- (delivered at commit): a graceful change of hands leaves no part unheld for a renewal
-- period.
SELECT pg_notify('tocsin_leases', $1)

-- name: ENSURE_PARTS
-- Make the lease rows of a part count once; a new row starts from the lowest watermark any
-- other part count recorded (re-reading a few buckets is safe; skipping them is not).
INSERT INTO leases (parts, part, watermark)
SELECT $1, part, (SELECT min(watermark) FROM leases WHERE parts <> $1)
FROM generate_series(0, $1 - 1) AS part
WHERE (SELECT count(*) FROM leases WHERE parts = $1) < $1
ON CONFLICT (parts, part) DO NOTHING

-- name: HELD
-- The parts a worker holds (expired or not: nobody else took them yet), locked.
SELECT part FROM leases WHERE parts = $1 AND holder = $2 ORDER BY part FOR UPDATE

-- name: KEEP_PARTS
-- Extend the held parts in $3 until $4; release the worker's other parts.
UPDATE leases
SET holder = CASE WHEN part = ANY($3::integer[]) THEN holder END,
    expires_at = CASE WHEN part = ANY($3::integer[]) THEN $4::timestamptz END
WHERE parts = $1 AND holder = $2

-- name: TAKE_PARTS
-- Take up to $5 free or expired parts, lowest first, each at a new epoch (the fencing token);
-- parts another worker is taking are skipped, and a part is re-checked once locked. One row
-- per part taken, saying whether another worker's expired lease held it (a takeover: this
-- worker's own excess parts were let go, holder NULL, just before).
WITH taking AS (
    SELECT part, holder FROM leases
    WHERE parts = $1 AND (holder IS NULL OR expires_at <= $4)
    ORDER BY part
    LIMIT $5
    FOR UPDATE SKIP LOCKED
)
UPDATE leases SET holder = $2, expires_at = $3, epoch = epoch + 1
WHERE parts = $1 AND part IN (SELECT part FROM taking)
RETURNING (SELECT t.holder FROM taking AS t WHERE t.part = leases.part) IS NOT NULL AS takeover

-- name: RELEASE_SOME
-- Give up some of a worker's leases.
UPDATE leases SET holder = NULL, expires_at = NULL
WHERE holder = $1 AND part = ANY($2::integer[])

-- name: ADVANCE_WATERMARK
-- Raise a part's watermark, only while the worker holds it and only upwards, with the time of
-- the sweep that found nothing pending left before it ($4, the database's clock when it read:
-- a new holder's first sweep reads what API writes saved since then).
UPDATE leases SET watermark = $3, swept_at = greatest(swept_at, $4::timestamptz)
WHERE part = $2 AND holder = $1 AND (watermark IS NULL OR watermark < $3)
RETURNING part

-- -- the in-app feed ------------------------------------------------------------------------------

-- name: ANNOUNCE_FEED
-- One NOTIFY per announced ring ($1: payloads `<owner> <firing id>`), in one statement.
-- In-app rings for the API processes' feeds (payloads: `codec.feed_payloads`). Committed
-- without waiting for the WAL flush: a NOTIFY holds a lock that serialises every notifying
-- commit of the server until its commit ends, and with a flush inside it a burst's
-- announcements queued behind each other's (300-850 ms for a batch of 1,000, measured
-- beside other writes). Nothing durable depends on it: an announcement lost in a crash is
-- a feed whose LISTEN connection broke, and the API re-reads what waits (`on_gap`).
SELECT pg_notify('tocsin_feed', payload)
FROM set_config('synchronous_commit', 'off', true) AS async_commit, unnest($1::text[]) AS payload

-- name: FEED_FIRINGS
-- The owner's in-app firings still fresh that wait for a page, and those sent since the
-- page's last event was ($3, none when NULL or not the owner's; see Store.feed_firings): a
-- range scan of firings_feed over (owner, deadline > now), the few rows found filtered and
-- sorted.
SELECT {firing} FROM firings
WHERE owner = $1 AND channel = 'inapp' AND deadline > $2
  AND (state IN ('queued', 'sending')
       OR (state = 'sent' AND reminder_id || '.' || due_second <> $3
           AND sent_at >= (SELECT sent_at - interval '{slack_seconds} seconds'
                           FROM firings
                           WHERE (due_second, reminder_id)
                               = (firing_second($3), split_part($3, '.', 1))
                             AND owner = $1)))
ORDER BY due_at, reminder_id
LIMIT $4

-- name: FEED_RINGS
-- Announced firings that may still go on a page. The feed's reads and marks by id: only the
-- primary key may serve them. Written plainly
-- (`channel = 'inapp' AND deadline > $2`), the conditions match the partial index
-- `firings_feed` (in-app firings by owner and deadline), and with statistics that count few
-- fresh in-app firings — a new database, or the first burst after an ANALYZE — the planner
-- took it and read every fresh in-app firing for each batch of ids (a 10,000-ring burst's
-- reads: 3.3 s of PostgreSQL's CPU instead of 0.06 s; docs/storage.md, "The hot paths"). The
-- CASE says the same (NULL, so false, for any other channel) in a form no index matches.
SELECT {firing} FROM unnest($1::text[]) AS k
CROSS JOIN LATERAL (
    SELECT * FROM firings
    WHERE (due_second, reminder_id) = (firing_second(k), split_part(k, '.', 1))
    OFFSET 0  -- a probe of the key an id, never a hash of the table
) AS f
WHERE CASE WHEN f.channel = 'inapp' THEN f.deadline END > $2
  AND f.state IN ('queued', 'sending', 'sent')

-- name: _MARK_FEED_SENT
-- A page received these: each one still fresh and not final becomes `sent` with one more
-- attempt (whoever held it: a worker's later result no longer applies). Two pages marking
-- one firing at once: the second finds it `sent` and changes nothing. A page that got the
-- ring at its first attempt (the worker's `held` not written yet, the usual case: rings for
-- the feed alone are announced at their claim) leaves it on the firing row (`sent_to`),
-- as a first try accepted by any channel does: one row write, not two.
-- By id alone, as FEED_RINGS (above): {by_ids}.
WITH sent AS (
    UPDATE firings
    SET state = 'sent', sent_at = $2, attempts = attempts + 1, sender = NULL,
        lease_until = NULL, next_attempt_at = NULL, last_error = NULL,
        sent_to = CASE WHEN attempts = 0 THEN 'feed' END
    WHERE {by_ids}
      AND CASE WHEN channel = 'inapp' THEN deadline END > $2
      AND state IN ('queued', 'sending')
    RETURNING reminder_id || '.' || due_second AS id, attempts, sent_to IS NOT NULL AS on_row
), recorded AS (
    INSERT INTO attempts (firing_id, number, at, channel, outcome, destination)
    SELECT id, attempts, $2, 'inapp', 'sent', 'feed' FROM sent WHERE NOT on_row
    ON CONFLICT (firing_id, number) DO NOTHING
)
SELECT count(*) FROM sent

-- -- upkeep: retention ------------------------------------------------------------------------

-- name: _PRUNE_FIRINGS
-- One batch of old rings: the oldest final firings due before $1, at most $2 (a range scan of
-- firings_pkey, keyed in due order, from its old end, bounded below as well for the generic
-- plan; a ring still being delivered is never old enough, and one a statement
-- holds is skipped, never waited for), their attempts, by primary key, the reminders their
-- rings finished, by primary key, and as many old rows of `rings`.
-- A firing stays while it is the last ring of a version that waits to ring again (its
-- reminder pending at the ring's version, and the occurrence after it, `next_due`, not
-- decided: a probe of rings_pkey): readers show it as the reminder's last ring. And a
-- firing stays while an earlier ring of its reminder is on its way (queued for a retry or
-- the feed, or being sent: a probe of firings_open, which holds only those; a ring whose
-- freshness outlasts retention), so that the last goes after it.
-- A reminder goes with its last ring's firing once its rings ended it (`fired`, `ended`, the
-- last ring due before $1, walked to from the ring of the firing deleted, {ring_state}, its
-- firing this one or none; or, rung by a release before, a row that is not pending, due
-- before $1, this firing its ring's). Its older firings went before it: firings go oldest
-- first. One skipped for a lock goes in its turn, after its reminder. It waits for a reminder an edit holds rather than
-- skipping it: skipped, it would have no firing left to go with. The
-- rings of a reminder a claim kept since before $1 names stay, with it, until recovery
-- forgot the claim ({owed}: a whole fleet stopped longer than retention keeps, back with
-- claims whose holds ran out long ago).
-- A row of `rings` due before $1 goes once no reader starts from it or walks through it: a
-- later ring of its version is there (the one at its `next_due`: readers look for a
-- version's newest ring, `looking`, and walk on from it) and its firing is gone (this
-- statement's stays until the next: the reminder it may finish is found from its ring), or
-- its reminder is gone (this statement's included) or at another version; the oldest first, a range scan of
-- rings_pkey (bounded below as well, as {owed} is, for the generic plan). A version's last
-- ring stays with its reminder.
WITH gone AS (
    DELETE FROM firings
    WHERE ctid = ANY(ARRAY(
        SELECT f.ctid FROM firings AS f
        WHERE f.due_second >= -9223372036854775808
          AND f.due_second <= floor(extract(epoch FROM $1::timestamptz))::bigint
          AND f.due_at < $1 AND f.state IN ('sent', 'failed', 'expired')
          AND f.reminder_id NOT IN ({owed})
          AND NOT EXISTS (
              SELECT 1 FROM firings AS open
              WHERE open.reminder_id = f.reminder_id
                AND CASE WHEN open.state IN ('queued', 'sending') THEN true END
                AND open.due_at < f.due_at
          )
          AND NOT EXISTS (
              SELECT 1 FROM reminders AS r
              JOIN rings AS g
                  ON (g.due_at, g.reminder_id, g.version) = (f.due_at, r.id, r.version)
              WHERE r.id = f.reminder_id AND r.status = 'pending' AND g.next_due IS NOT NULL
                AND NOT EXISTS (
                    SELECT 1 FROM rings AS h
                    WHERE (h.due_at, h.reminder_id, h.version) = (g.next_due, r.id, r.version)
                    OFFSET 0  -- a probe a row (as below)
                )
          )
        ORDER BY f.due_second
        LIMIT $2
        FOR UPDATE OF f SKIP LOCKED
    ))
    RETURNING reminder_id || '.' || due_second AS id, reminder_id, due_at
), attempts_gone AS (
    DELETE FROM attempts WHERE firing_id = ANY(ARRAY(SELECT id FROM gone)) RETURNING 1
), finished AS (
    SELECT r.id FROM gone JOIN reminders AS r ON r.id = gone.reminder_id
    {ring_state}
    WHERE ((r.status <> 'pending' AND r.due_at < $1 AND gone.due_at >= r.due_at)
           OR (r.status = 'pending' AND now.now_status IN ('fired', 'ended')
               AND now.last_rung < $1
               AND (now.last_due_at IS NULL OR now.last_due_at = gone.due_at)))
), reminders_gone AS (
    DELETE FROM reminders AS r
    WHERE id = ANY(ARRAY(SELECT id FROM finished))
    RETURNING id
), rings_gone AS (
    DELETE FROM rings
    WHERE ctid = ANY(ARRAY(
        SELECT g.ctid FROM rings AS g
        WHERE g.due_at >= '-infinity' AND g.due_at < $1
          AND (
              EXISTS (
                  SELECT 1 FROM rings AS h
                  WHERE (h.due_at, h.reminder_id, h.version)
                      = (g.next_due, g.reminder_id, g.version)
                  OFFSET 0  -- a probe a row, never a hash of the table (see _LOAD_LANE)
              ) AND NOT EXISTS (
                  SELECT 1 FROM firings AS f
                  WHERE (f.due_second, f.reminder_id)
                      = (floor(extract(epoch FROM g.due_at))::bigint, g.reminder_id)
                  OFFSET 0  -- a probe a row (as above)
              )
              OR NOT EXISTS (
                  SELECT 1 FROM reminders AS r
                  WHERE r.id = g.reminder_id AND r.version = g.version
                    AND r.id NOT IN (SELECT id FROM reminders_gone)
              )
          )
        ORDER BY g.due_at
        LIMIT $2
        FOR UPDATE OF g SKIP LOCKED
    ))
    RETURNING 1
)
SELECT (SELECT count(*) FROM gone) AS firings, (SELECT count(*) FROM attempts_gone) AS attempts,
    (SELECT count(*) FROM reminders_gone) AS reminders, (SELECT count(*) FROM rings_gone) AS rings

-- name: TIDY_DUE
-- One batch of the occurrences of the default partition `due_outside` (what lies outside the
-- months of `due` made: store/postgres/months.py) decided in minutes before $1: at most $2 a lane
-- and priority, oldest first, whose key a row of `rings` holds (a claim rang it, or an API
-- write took it back) or whose reminder is gone or at another version. An occurrence still
-- undecided (saved late behind its part's watermark, for the sweep) is kept. Deleted by row
-- address, in physical order. The months themselves go whole (`months.drop_months`).
WITH old AS (
    SELECT d.ctid AS row_id
    FROM generate_series(0, 15) AS lanes (lane), generate_series(0, 1) AS ranks (rank),
    LATERAL (
        SELECT d.ctid FROM due_outside AS d
        WHERE d.lane = lanes.lane AND d.rank = ranks.rank AND d.bucket < $1
          AND (
              EXISTS (
                  SELECT 1 FROM rings AS g
                  WHERE (g.due_at, g.reminder_id, g.version)
                      = (d.due_at, d.reminder_id, d.version)
                  OFFSET 0
              )
              OR NOT EXISTS (
                  SELECT 1 FROM reminders AS r
                  WHERE r.id = d.reminder_id AND r.version = d.version
              )
          )
        ORDER BY d.bucket, d.due_at
        LIMIT $2
    ) AS d
), gone AS (
    DELETE FROM due_outside WHERE ctid = ANY(ARRAY(SELECT row_id FROM old)) RETURNING 1
)
SELECT count(*) FROM gone

-- name: DUE_PARTITIONS
-- The tables of `due`'s months (`due_YYYY_MM`) and its default partition.
SELECT c.relname AS name FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
WHERE i.inhparent = 'due'::regclass

-- name: MONTH_LOCKS
-- How long making or dropping a month of `due` waits for a lock before it gives up until the
-- next pass (loads and API writes wait for it meanwhile).
SET LOCAL lock_timeout = '1s'

-- name: _MAKE_MONTH
-- Make the table of {month}, buckets [{first}, {after}), with the rows of the default
-- partition that fall in it, and attach it. Made apart and attached (ATTACH takes a SHARE
-- UPDATE EXCLUSIVE lock of `due`, where CREATE TABLE … PARTITION OF takes an ACCESS EXCLUSIVE
-- one); its CHECK constraint spares ATTACH a scan of the new table, and the default partition
-- is scanned for rows of the month, none once they moved. `due` itself is locked first,
-- against reads as well as writes (ACCESS EXCLUSIVE, for the moment the month takes):
-- - an insert routed to the default partition before the month was attached, and let through
--   once it was, failed the default partition's new constraint ("violates partition
--   constraint"); waiting for the lock instead, it is routed with the month in place;
-- - a load planned before the month was attached, and run once it was, read neither the rows
--   moved out of the default partition (its snapshot, taken after the commit, saw them gone)
--   nor the month (not in its plan): a part's loader passed a minute's rows that a fresh
--   database's first pass moved into this month, and they waited for a sweep that did not
--   look for them (saved before it). Waiting for the lock instead, the load is planned with
--   the month in place.
LOCK TABLE due IN ACCESS EXCLUSIVE MODE;
CREATE TABLE {month} (LIKE due INCLUDING DEFAULTS INCLUDING INDEXES);
ALTER TABLE {month} ADD CONSTRAINT {month}_bucket CHECK (bucket >= {first} AND bucket < {after});
WITH moved AS (
    DELETE FROM due_outside WHERE bucket >= {first} AND bucket < {after} RETURNING *
)
INSERT INTO {month} SELECT * FROM moved;
ALTER TABLE due ATTACH PARTITION {month} FOR VALUES FROM ({first}) TO ({after});
ALTER TABLE {month} DROP CONSTRAINT {month}_bucket

-- name: SETTLED_BUCKET
-- The last bucket a month of `due` may end by and be dropped: a day before the lowest
-- watermark of the leases renewed within the last day (a part count no longer in use stops
-- counting after a day), NULL while any of them never ran or none was renewed.
SELECT CASE WHEN count(*) > 0 AND count(*) = count(watermark) THEN min(watermark) - 1440 END
FROM leases
WHERE expires_at > clock_timestamp() - interval '1 day'

-- name: _MONTH_UNDECIDED
-- The occurrences of the month {month}, and how many of them are undecided (no row of `rings`
-- has their key): read whole, once, before it is dropped.
SELECT count(*) AS occurrences, count(*) FILTER (WHERE NOT EXISTS (
    SELECT 1 FROM rings AS g
    WHERE (g.due_at, g.reminder_id, g.version) = (d.due_at, d.reminder_id, d.version)
    OFFSET 0
)) AS undecided
FROM {month} AS d

-- name: _PRUNE_REMINDERS
-- One batch of the reminders finished otherwise (cancelled, or edited since their ring:
-- `due_at` NULL, not pending) last changed before $1, at most $2, oldest first: a range scan
-- of the partial index reminders_finished, whose predicate this one repeats. A reminder goes
-- once its last ring's firing has (`rang_due_at`: a probe of firings_pkey) and none of its
-- firings is on its way (a probe of firings_open; its older ones, final, go first, in due
-- order), and not while a claim kept since before $1 names it ({owed}: a series cancelled
-- while its ring was on its way, its sender gone, its firing written by recovery from this
-- row).
WITH gone AS (
    DELETE FROM reminders
    WHERE id = ANY(ARRAY(
        SELECT id FROM reminders AS r
        WHERE status <> 'pending' AND due_at IS NULL AND updated_at < $1
          AND NOT EXISTS (
              SELECT 1 FROM firings AS f
              WHERE (f.due_second, f.reminder_id)
                  = (floor(extract(epoch FROM r.rang_due_at))::bigint, r.id)
          )
          AND NOT EXISTS (
              SELECT 1 FROM firings AS f
              WHERE f.reminder_id = r.id
                AND CASE WHEN f.state IN ('queued', 'sending') THEN true END
          )
          AND r.id NOT IN ({owed})
        ORDER BY updated_at
        LIMIT $2
        FOR UPDATE SKIP LOCKED
    )) AND status <> 'pending' AND due_at IS NULL
    RETURNING 1
)
SELECT count(*) FROM gone

-- name: _OWED
-- {owed} of PRUNE_FIRINGS and PRUNE_REMINDERS: the reminders of the claims kept with a ring
-- due before $1, whose rings retention leaves alone, firings and reminders, until recovery
-- has forgotten the claim (a second after its hold, once any worker runs): recovery makes a
-- ring it finds unwritten from its reminder, so deleting either first would lose a ring
-- still owed or write again one that went. Only those claims can name what either
-- statement deletes: a claim's rings are all due no earlier than its `oldest_due`, and what
-- they delete rang last before $1 (a firing's due instant, a reminder's, or its last change,
-- which came after every claim of it). One range scan of claimed_rings_oldest from its old
-- end, which finds nothing but after an outage (or with a freshness longer than retention
-- keeps): read once a statement, nothing more is read here. The range is bounded below as
-- well (`-infinity`, a claim of the release before, is the least there is): a generic plan
-- takes a bounded range of an unknown bound for 0.5 % of the table, where `< $1` alone is a
-- third of it, for which it read every claim of a burst in flight (a Seq Scan).
SELECT owed.reminder_id
FROM claimed_rings AS c, unnest(c.reminder_ids) AS owed (reminder_id)
WHERE c.oldest_due >= '-infinity' AND c.oldest_due < $1

-- name: PRUNE_IDEMPOTENCY_KEYS
-- One batch of idempotency keys created before $1, at most $2, oldest first
-- (idempotency_keys_age), deleted by their row address (a TID scan: a key is never updated,
-- and only retention deletes keys).
WITH gone AS (
    DELETE FROM idempotency_keys
    WHERE ctid = ANY(ARRAY(
        SELECT ctid FROM idempotency_keys
        WHERE created_at < $1
        ORDER BY created_at
        LIMIT $2
        FOR UPDATE SKIP LOCKED
    ))
    RETURNING 1
)
SELECT count(*) FROM gone

-- name: HOLD_CHORE
-- Take or keep chore $1's lease for worker $2 until the database's now + $3: only when free,
-- run out, or held by $2 already (then the holder comes back; else no row).
INSERT INTO chores (name, holder, expires_at) VALUES ($1, $2, clock_timestamp() + $3::interval)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE chores.holder = excluded.holder OR chores.holder IS NULL
    OR chores.expires_at < clock_timestamp()
RETURNING holder

-- -- upkeep: time zone data upgrades ------------------------------------------------------------

-- name: ZONE_DATA_RECORDED
-- Whether tzdata release $1 is recorded.
SELECT EXISTS (SELECT 1 FROM zone_data WHERE version = $1)

-- name: RECORD_ZONE_DATA
-- Record release $1's zone digests ($2 zones, $3 digests), leaving rows recorded already.
INSERT INTO zone_data (version, zone, digest)
SELECT $1, zone, digest FROM unnest($2::text[], $3::text[]) AS given (zone, digest)
ON CONFLICT (version, zone) DO NOTHING

-- name: PENDING_IN_ZONES
-- The pending reminders with ids in ($1, $2] whose zone is one of $3, as their rows are
-- (`reminders_now` then finds the occurrence that waits).
SELECT * FROM reminders
WHERE id > $1 AND id <= $2 AND zone = ANY($3::text[]) AND status = 'pending'
ORDER BY id

-- name: RESCHEDULE
-- Move reminders to new due times, each only by taking back the occurrence that waited as it
-- was read (`was`, `_TAKE_BACK`: a claim, edit or cancel since then decided it first, and
-- wins) at the version it was read with; the new occurrence waits in `due`. Announce
-- the wake-ups ($7) when any moved. $8: the minute of each `was`; $9: each one's last ring as
-- it was read, kept for readers (as UPDATE_REMINDER's $20). In a transaction with the
-- caller's check that every occurrence taken back was moved.
WITH m AS (
    SELECT * FROM unnest(
        $1::text[], $2::integer[], $3::timestamptz[], $4::timestamptz[], $5::integer[],
        $8::integer[], $9::timestamptz[]
    ) AS m (id, version, was, due_at, bucket, was_bucket, rang)
), keyed AS MATERIALIZED (
    SELECT m.*, r.shard / 64 AS lane, coalesce(r.priority, 0) AS rank
    FROM m JOIN reminders AS r ON r.id = m.id
), removed AS (
    DELETE FROM due AS d
    USING keyed AS m
    WHERE (d.lane, d.rank, d.bucket, d.due_at, d.reminder_id, d.version)
        = (m.lane, m.rank, m.was_bucket, m.was, m.id, m.version)
    RETURNING d.due_at, d.reminder_id, d.version
), {take_back}, moved AS (
    UPDATE reminders AS r
    SET due_at = m.due_at, bucket = m.bucket, version = r.version + 1,
        updated_at = $6, rang_due_at = greatest(m.rang, r.rang_due_at)
    FROM taken JOIN m ON m.id = taken.reminder_id
    WHERE r.id = taken.reminder_id AND r.version = taken.version AND r.status = 'pending'
    RETURNING r.*
), waiting AS (
    INSERT INTO due (
        lane, rank, bucket, due_at, reminder_id, version, shard, saved_at, prev_due, ring
    )
    SELECT shard / 64, coalesce(priority, 0), bucket, due_at, id, version, shard,
        clock_timestamp(), rang_due_at, {ring}
    FROM moved
)
SELECT id, (SELECT count(pg_notify('tocsin_due', wake)) FROM unnest($7::text[]) AS wake) AS woke,
    (SELECT count(*) FROM taken) AS taken
FROM moved

-- -- the status board ---------------------------------------------------------------------------

-- name: STATUS_PLANNING
-- How the status board's counts and samples are planned. Each reads one minute (bucket) at a
-- time from a parameter of a function scan, so the planner estimates a minute by a default
-- selectivity (15 rows of 3,000; a few thousand of a billion) whatever it holds: for a
-- small estimate it prefers a bitmap scan, which reads every index entry of the minute
-- before the LIMIT applies — all 3 million of 09:00 New York — and sorts them. Without bitmap
-- scans and sorts, each minute is an index scan in index order that stops at the cap.
SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off; SET LOCAL max_parallel_workers_per_gather = 0

-- name: STATUS_LEASES
-- The leases held now, by the database's clock.
SELECT holder, part FROM leases
WHERE holder IS NOT NULL AND expires_at > clock_timestamp()
ORDER BY holder, part

-- name: COUNT_DUE
-- Occurrences waiting in each bucket of [$1, $2], each counted up to $3: one range scan of
-- `due_pkey` per lane (its first column, `shard / 64`: the 16 of tocsin.ids.LANES),
-- priority (its second, urgent 0 and bulk 1) and bucket, each stopped at the cap, passing
-- by those decided (a probe of rings_pkey each); their counts add up to the bucket's,
-- capped again.
SELECT buckets.bucket, least($3::bigint, (
    SELECT sum((
        SELECT count(*) FROM (
            SELECT 1 FROM due
            WHERE due.lane = lanes.lane AND due.rank = ranks.rank
              AND due.bucket = buckets.bucket AND due.bucket < {never}
              AND NOT EXISTS (
                  SELECT 1 FROM rings AS g
                  WHERE (g.due_at, g.reminder_id, g.version)
                      = (due.due_at, due.reminder_id, due.version)
              )
            LIMIT $3
        ) AS capped
    ))::bigint
    FROM generate_series(0, 15) AS lanes (lane), generate_series(0, 1) AS ranks (rank)
)) AS due
FROM generate_series($1::integer, $2::integer) AS buckets (bucket)

-- name: COUNT_OVERDUE
-- Occurrences waiting from before bucket $1, counted up to $2 (the sweep keeps them few):
-- one range scan of `due_pkey` per lane and priority from the lowest watermark, as
-- COUNT_DUE.
SELECT least($2::bigint, sum((
    SELECT count(*) FROM (
        SELECT 1 FROM due
        WHERE due.lane = lanes.lane AND due.rank = ranks.rank AND due.bucket < $1
          AND due.bucket > {settled} AND due.bucket < {never}
          AND NOT EXISTS (
              SELECT 1 FROM rings AS g
              WHERE (g.due_at, g.reminder_id, g.version)
                  = (due.due_at, due.reminder_id, due.version)
          )
        LIMIT $2
    ) AS capped
))::bigint)
FROM generate_series(0, 15) AS lanes (lane), generate_series(0, 1) AS ranks (rank)

-- name: SAMPLE_RINGS
-- The firings due in each minute of [$1, $2] (UTC epoch minutes), the $3 earliest of a
-- minute at most (one range scan of firings_pkey per minute, keyed in due order; the rows
-- of a minute lie together), counted by state, with the
-- lateness of the sent ones: nearest-rank percentiles (percentile_disc skips the NULLs of
-- the others). One row per minute.
SELECT minutes.minute, counted.*
FROM generate_series($1::bigint, $2::bigint) AS minutes (minute)
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE state = 'sent') AS sent,
           count(*) FILTER (WHERE state = 'failed') AS failed,
           count(*) FILTER (WHERE state = 'expired') AS expired,
           count(*) FILTER (WHERE state IN ('queued', 'sending')) AS waiting,
           percentile_disc(0.5) WITHIN GROUP (ORDER BY lateness) AS p50,
           percentile_disc(0.99) WITHIN GROUP (ORDER BY lateness) AS p99,
           max(lateness) AS max
    FROM (
        SELECT state, extract(epoch FROM sent_at - due_at)::float8 AS lateness
        FROM firings
        WHERE due_second >= minutes.minute * 60 AND due_second < (minutes.minute + 1) * 60
        ORDER BY due_second
        LIMIT $3
    ) AS sample
) AS counted

