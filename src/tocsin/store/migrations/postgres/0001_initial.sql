-- Tocsin's first schema on PostgreSQL.
-- Instants are timestamptz; a bucket is the UTC epoch minute of `due_at` (integer). Ids and
-- owners use the "C" collation: they are compared byte-wise, never shown sorted to people.
-- Fixed-width columns come first in each table so rows pack without alignment padding.
-- No foreign keys on the hot tables: a firing is only ever inserted from its reminder's
-- conditional update in the same statement (CLAIM), an attempt from its firing's update
-- (RECORD_ATTEMPTS), so the references hold by construction, while the per-row foreign-key
-- triggers cost about a third of a claim. (SQLite keeps them: there they are cheap.)

-- One row per reminder. `shard` is the owner's logical shard (tocsin.ids.shard_of), which
-- the id carries as well; `due_at`/`bucket` are set exactly while `status` is pending.
CREATE TABLE reminders (
    due_at timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    bucket integer,
    freshness integer NOT NULL,
    version integer NOT NULL,
    shard smallint NOT NULL,
    id text COLLATE "C" NOT NULL,
    owner text COLLATE "C" NOT NULL,
    status text NOT NULL,
    channel text NOT NULL,
    text text NOT NULL,
    zone text NOT NULL,
    anchor text NOT NULL,
    rule text,
    at text,
    repeat text,
    metadata json,
    source text,
    snoozed_from text COLLATE "C",
    CONSTRAINT reminders_pkey PRIMARY KEY (id),
    CONSTRAINT reminders_status CHECK (status IN ('pending', 'fired', 'ended', 'cancelled')),
    CONSTRAINT reminders_pending_due CHECK (
        status <> 'pending' OR (due_at IS NOT NULL AND bucket IS NOT NULL)
    )
);

-- The scheduler's hot path: pending reminders of a bucket range and a shard range. Partial,
-- so it holds only what is still to ring.
CREATE INDEX reminders_due ON reminders (bucket, shard) WHERE status = 'pending';

-- An owner's reminders in id (= creation) order, for keyset pagination.
CREATE INDEX reminders_owner ON reminders (owner, id);

-- One row per ring: the durable delivery record and queue entry. `id` is the delivery
-- identity `<reminder id>.<due epoch second>`.
CREATE TABLE firings (
    due_at timestamptz NOT NULL,
    deadline timestamptz NOT NULL,
    created_at timestamptz NOT NULL,
    next_attempt_at timestamptz,
    lease_until timestamptz,
    sent_at timestamptz,
    attempts integer NOT NULL DEFAULT 0,
    shard smallint NOT NULL,
    id text COLLATE "C" NOT NULL,
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
    CONSTRAINT firings_pkey PRIMARY KEY (id),
    CONSTRAINT firings_state CHECK (state IN ('queued', 'sending', 'sent', 'failed', 'expired'))
);

-- A reminder's firings, newest first (its history and its last firing).
CREATE INDEX firings_reminder ON firings (reminder_id, due_at);

-- The delivery queue: firings waiting for a retry, and firings being sent (whose sender may
-- have vanished). Partial, so they hold only live work.
CREATE INDEX firings_queued ON firings (next_attempt_at) WHERE state = 'queued';
CREATE INDEX firings_sending ON firings (lease_until) WHERE state = 'sending';

-- Every delivery attempt of a firing.
CREATE TABLE attempts (
    at timestamptz NOT NULL,
    number integer NOT NULL,
    firing_id text COLLATE "C" NOT NULL,
    channel text NOT NULL,
    outcome text NOT NULL,
    error text,
    provider_id text,
    CONSTRAINT attempts_pkey PRIMARY KEY (firing_id, number),
    CONSTRAINT attempts_outcome CHECK (outcome IN ('sent', 'retry', 'failed'))
);

-- Where an owner can be reached: push tokens, web-push subscriptions, email, phone.
CREATE TABLE contacts (
    created_at timestamptz NOT NULL,
    owner text COLLATE "C" NOT NULL,
    kind text NOT NULL,
    address text NOT NULL,
    data json,
    CONSTRAINT contacts_pkey PRIMARY KEY (owner, kind, address)
);

-- Apps allowed to call the API: one hashed key each, and where their webhooks go.
CREATE TABLE apps (
    created_at timestamptz NOT NULL,
    webhook_disabled boolean NOT NULL DEFAULT false,
    name text NOT NULL,
    key_hash text NOT NULL,
    key_prefix text NOT NULL,
    webhook_url text,
    webhook_secret text,
    CONSTRAINT apps_pkey PRIMARY KEY (name),
    CONSTRAINT apps_key_hash_key UNIQUE (key_hash)
);

-- Answers to requests that carried an Idempotency-Key, replayed on retry.
CREATE TABLE idempotency_keys (
    created_at timestamptz NOT NULL,
    status_code integer NOT NULL,
    scope text NOT NULL,
    key text NOT NULL,
    request_hash text NOT NULL,
    body bytea NOT NULL,
    CONSTRAINT idempotency_keys_pkey PRIMARY KEY (scope, key)
);

-- Scheduler parts: who holds part `part` of `parts` until when, and the last bucket the
-- part finished (which stays with the part whoever holds it).
CREATE TABLE leases (
    parts integer NOT NULL,
    part integer NOT NULL,
    expires_at timestamptz,
    watermark integer,
    holder text,
    CONSTRAINT leases_pkey PRIMARY KEY (parts, part)
);

-- Worker heartbeats: the live workers share the parts.
CREATE TABLE workers (
    heartbeat_at timestamptz NOT NULL,
    worker text NOT NULL,
    CONSTRAINT workers_pkey PRIMARY KEY (worker)
);

-- Secrets every process sharing the database must agree on (owner-token signing key).
CREATE TABLE secrets (
    name text NOT NULL,
    value text NOT NULL,
    CONSTRAINT secrets_pkey PRIMARY KEY (name)
);
