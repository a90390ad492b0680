-- The schema every migration together makes: a snapshot, compared with a freshly
-- migrated database by tests/integration/store/test_migrations.py. Regenerate with
-- `.venv/bin/python -m tests.integration.store.schema`; never edit by hand.

CREATE TABLE apps (
    created_at timestamp with time zone NOT NULL,
    webhook_disabled boolean NOT NULL DEFAULT false,
    name text NOT NULL,
    key_hash text NOT NULL,
    key_prefix text NOT NULL,
    webhook_url text,
    webhook_secret text,
    admin boolean NOT NULL DEFAULT false,
    revoked_at timestamp with time zone,
    priority smallint,
    CONSTRAINT apps_key_hash_key UNIQUE (key_hash),
    CONSTRAINT apps_pkey PRIMARY KEY (name),
    CONSTRAINT apps_priority_check CHECK ((priority = 1))
);

CREATE TABLE attempts (
    at timestamp with time zone NOT NULL,
    number integer NOT NULL,
    firing_id text COLLATE "C" NOT NULL,
    channel text NOT NULL,
    outcome text NOT NULL,
    error text,
    provider_id text,
    destination text COLLATE "C",
    CONSTRAINT attempts_outcome CHECK ((outcome = ANY (ARRAY['sent'::text, 'retry'::text, 'failed'::text]))),
    CONSTRAINT attempts_pkey PRIMARY KEY (firing_id, number)
);

CREATE TABLE chores (
    expires_at timestamp with time zone,
    name text NOT NULL,
    holder text,
    CONSTRAINT chores_pkey PRIMARY KEY (name)
);

CREATE TABLE claimed_rings (
    hold_until timestamp with time zone NOT NULL,
    sender text NOT NULL,
    reminder_ids text[] NOT NULL,
    due_ats timestamp with time zone[] NOT NULL,
    routes text[],
    freshness integer[],
    oldest_due timestamp with time zone NOT NULL DEFAULT '-infinity'::timestamp with time zone,
    id bigint NOT NULL,
    CONSTRAINT claimed_rings_pkey PRIMARY KEY (id)
);

CREATE TABLE contacts (
    id text COLLATE "C" NOT NULL,
    owner text COLLATE "C" NOT NULL,
    shard smallint NOT NULL,
    kind text COLLATE "C" NOT NULL,
    address text COLLATE "C" NOT NULL,
    label text COLLATE "C",
    secret text COLLATE "C",
    disabled_reason text COLLATE "C",
    disabled_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    source text COLLATE "C",
    CONSTRAINT contacts_pkey PRIMARY KEY (id)
);

CREATE TABLE due (
    lane smallint NOT NULL,
    rank smallint NOT NULL,
    bucket integer NOT NULL,
    due_at timestamp with time zone NOT NULL,
    reminder_id text COLLATE "C" NOT NULL,
    version integer NOT NULL,
    shard smallint NOT NULL,
    saved_at timestamp with time zone,
    prev_due timestamp with time zone,
    ring text,
    CONSTRAINT due_pkey PRIMARY KEY (lane, rank, bucket, due_at, reminder_id, version) INCLUDE (shard, prev_due)
) PARTITION BY RANGE (bucket);

CREATE TABLE firings (
    due_at timestamp with time zone NOT NULL,
    deadline timestamp with time zone NOT NULL,
    created_at timestamp with time zone NOT NULL,
    next_attempt_at timestamp with time zone,
    lease_until timestamp with time zone,
    sent_at timestamp with time zone,
    attempts integer NOT NULL DEFAULT 0,
    shard smallint NOT NULL,
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
    priority smallint,
    done_at timestamp with time zone,
    prev_due timestamp with time zone,
    due_second bigint NOT NULL,
    CONSTRAINT firings_pkey PRIMARY KEY (due_second, reminder_id),
    CONSTRAINT firings_priority_check CHECK ((priority = 1)),
    CONSTRAINT firings_state CHECK ((state = ANY (ARRAY['queued'::text, 'sending'::text, 'sent'::text, 'failed'::text, 'expired'::text])))
);

CREATE TABLE idempotency_keys (
    created_at timestamp with time zone NOT NULL,
    status_code integer NOT NULL,
    scope text NOT NULL,
    key text NOT NULL,
    request_hash text NOT NULL,
    body bytea NOT NULL,
    CONSTRAINT idempotency_keys_pkey PRIMARY KEY (scope, key)
);

CREATE TABLE leases (
    parts integer NOT NULL,
    part integer NOT NULL,
    expires_at timestamp with time zone,
    watermark integer,
    holder text,
    epoch bigint NOT NULL DEFAULT 0,
    swept_at timestamp with time zone,
    CONSTRAINT leases_pkey PRIMARY KEY (parts, part)
);

CREATE TABLE list_assignees (
    reminder_id text COLLATE "C" NOT NULL,
    assignee text COLLATE "C" NOT NULL,
    CONSTRAINT list_assignees_pkey PRIMARY KEY (reminder_id)
);

CREATE TABLE list_members (
    list_id text COLLATE "C" NOT NULL,
    member text COLLATE "C" NOT NULL,
    role text NOT NULL,
    invited_at timestamp with time zone NOT NULL,
    joined_at timestamp with time zone,
    CONSTRAINT list_members_list_id_fkey FOREIGN KEY (list_id) REFERENCES lists(id),
    CONSTRAINT list_members_pkey PRIMARY KEY (list_id, member),
    CONSTRAINT list_members_role_check CHECK ((role = ANY (ARRAY['owner'::text, 'editor'::text, 'viewer'::text])))
);

CREATE TABLE lists (
    id text COLLATE "C" NOT NULL,
    name text NOT NULL,
    source text COLLATE "C",
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT lists_pkey PRIMARY KEY (id)
);

CREATE TABLE owner_token_revocations (
    owner text NOT NULL,
    revoked_before timestamp with time zone NOT NULL,
    CONSTRAINT owner_token_revocations_pkey PRIMARY KEY (owner)
);

CREATE TABLE place_triggers (
    reminder_id text COLLATE "C" NOT NULL,
    place_id text COLLATE "C" NOT NULL,
    event text NOT NULL,
    after_minute smallint,
    before_minute smallint,
    once text,
    rang_at timestamp with time zone,
    rang_day text COLLATE "C",
    CONSTRAINT place_triggers_after_minute_check CHECK (((after_minute >= 0) AND (after_minute <= 1439))),
    CONSTRAINT place_triggers_before_minute_check CHECK (((before_minute >= 0) AND (before_minute <= 1439))),
    CONSTRAINT place_triggers_event_check CHECK ((event = ANY (ARRAY['arrive'::text, 'leave'::text]))),
    CONSTRAINT place_triggers_once_check CHECK ((once = ANY (ARRAY['day'::text, 'ever'::text]))),
    CONSTRAINT place_triggers_pkey PRIMARY KEY (reminder_id),
    CONSTRAINT place_triggers_reminder_id_fkey FOREIGN KEY (reminder_id) REFERENCES reminders(id) ON DELETE CASCADE
);

CREATE TABLE places (
    id text COLLATE "C" NOT NULL,
    owner text COLLATE "C" NOT NULL,
    shard smallint NOT NULL,
    name text NOT NULL,
    latitude double precision NOT NULL,
    longitude double precision NOT NULL,
    radius_m integer NOT NULL,
    source text COLLATE "C",
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT places_pkey PRIMARY KEY (id)
);

CREATE TABLE quiet_hours (
    owner text COLLATE "C" NOT NULL,
    saver text COLLATE "C" NOT NULL,
    start_minute smallint NOT NULL,
    end_minute smallint NOT NULL,
    zone text NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT quiet_hours_end_minute_check CHECK (((end_minute >= 0) AND (end_minute <= 1439))),
    CONSTRAINT quiet_hours_pkey PRIMARY KEY (owner, saver),
    CONSTRAINT quiet_hours_span CHECK ((start_minute <> end_minute)),
    CONSTRAINT quiet_hours_start_minute_check CHECK (((start_minute >= 0) AND (start_minute <= 1439)))
);

CREATE TABLE reminders (
    due_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
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
    rang_due_at timestamp with time zone,
    priority smallint,
    ignore_quiet boolean,
    alerts text,
    nag integer,
    nags smallint,
    CONSTRAINT reminders_ignore_quiet_check CHECK (ignore_quiet),
    CONSTRAINT reminders_nag_check CHECK ((nag > 0)),
    CONSTRAINT reminders_nags_check CHECK ((nags > 0)),
    CONSTRAINT reminders_pending_due CHECK (((status <> 'pending'::text) OR ((due_at IS NOT NULL) AND (bucket IS NOT NULL)))),
    CONSTRAINT reminders_pkey PRIMARY KEY (id),
    CONSTRAINT reminders_priority_check CHECK ((priority = 1)),
    CONSTRAINT reminders_status CHECK ((status = ANY (ARRAY['pending'::text, 'fired'::text, 'ended'::text, 'cancelled'::text])))
);

CREATE TABLE rings (
    due_at timestamp with time zone NOT NULL,
    reminder_id text COLLATE "C" NOT NULL,
    version integer NOT NULL,
    repeat boolean NOT NULL,
    next_due timestamp with time zone,
    taken boolean NOT NULL DEFAULT false,
    prev_due timestamp with time zone,
    CONSTRAINT rings_pkey PRIMARY KEY (due_at, reminder_id, version)
);

CREATE TABLE schema_migration_steps (
    version integer NOT NULL,
    step integer NOT NULL,
    next_page bigint,
    pages bigint,
    done_at timestamp with time zone,
    CONSTRAINT schema_migration_steps_pkey PRIMARY KEY (version, step)
);

CREATE TABLE schema_migrations (
    version integer NOT NULL,
    applied_at timestamp with time zone NOT NULL DEFAULT now(),
    name text NOT NULL,
    CONSTRAINT schema_migrations_pkey PRIMARY KEY (version)
);

CREATE TABLE secrets (
    name text NOT NULL,
    value text NOT NULL,
    CONSTRAINT secrets_pkey PRIMARY KEY (name)
);

CREATE TABLE workers (
    heartbeat_at timestamp with time zone NOT NULL,
    worker text NOT NULL,
    breakers text,
    CONSTRAINT workers_pkey PRIMARY KEY (worker)
);

CREATE TABLE zone_data (
    version text NOT NULL,
    zone text COLLATE "C" NOT NULL,
    digest text NOT NULL,
    CONSTRAINT zone_data_pkey PRIMARY KEY (version, zone)
);

CREATE TABLE due_never PARTITION OF due FOR VALUES FROM (2119574880) TO (MAXVALUE);

CREATE TABLE due_outside PARTITION OF due DEFAULT;

CREATE INDEX claimed_rings_hold ON public.claimed_rings USING btree (hold_until);
CREATE INDEX claimed_rings_oldest ON public.claimed_rings USING btree (oldest_due);
CREATE INDEX contacts_owner_kind ON public.contacts USING btree (owner, kind, id);
CREATE INDEX due_saved ON ONLY public.due USING btree (lane, rank, saved_at) WHERE (saved_at IS NOT NULL);
CREATE INDEX firings_feed ON public.firings USING btree (owner, deadline) WHERE (channel = 'inapp'::text);
CREATE INDEX firings_open ON public.firings USING btree (reminder_id) WHERE 
CASE
    WHEN (state = ANY (ARRAY['queued'::text, 'sending'::text])) THEN true
    ELSE NULL::boolean
END;
CREATE INDEX firings_queued ON public.firings USING btree (next_attempt_at) WHERE (state = 'queued'::text);
CREATE INDEX firings_sending ON public.firings USING btree (lease_until) WHERE (state = 'sending'::text);
CREATE INDEX idempotency_keys_age ON public.idempotency_keys USING btree (created_at);
CREATE INDEX list_members_by_member ON public.list_members USING btree (member, list_id);
CREATE INDEX lists_by_source ON public.lists USING btree (source, id) WHERE (source IS NOT NULL);
CREATE INDEX place_triggers_place ON public.place_triggers USING btree (place_id, event);
CREATE INDEX places_owner ON public.places USING btree (owner, id);
CREATE INDEX reminders_finished ON public.reminders USING btree (updated_at) WHERE ((status <> 'pending'::text) AND (due_at IS NULL));
CREATE INDEX reminders_owner ON public.reminders USING btree (owner, id);

CREATE OR REPLACE FUNCTION public.firing_second(id text)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE STRICT
RETURN CASE WHEN (id ~ '^[^.]+\.[0-9]{1,18}$'::text) THEN (split_part(id, '.'::text, 2))::bigint ELSE NULL::bigint END;
