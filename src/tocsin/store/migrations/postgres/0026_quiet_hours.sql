-- Owners' quiet hours: a span of the local day (start and end in minutes after local
-- midnight, in `zone`) in which bulk rings wait until it ends (docs/api.md, "Quiet
-- hours"). One row for each saver of an owner's: `saver` the app whose key saved it, or ''
-- for the owner himself (his apply to every ring of his; an app's to its reminders' rings).
-- Read by owner (the primary key's prefix) when a bulk ring is about to be sent.
CREATE TABLE quiet_hours (
    owner text COLLATE "C" NOT NULL,
    saver text COLLATE "C" NOT NULL,
    start_minute smallint NOT NULL CHECK (start_minute BETWEEN 0 AND 1439),
    end_minute smallint NOT NULL CHECK (end_minute BETWEEN 0 AND 1439),
    zone text NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT quiet_hours_pkey PRIMARY KEY (owner, saver),
    CONSTRAINT quiet_hours_span CHECK (start_minute <> end_minute)
);
