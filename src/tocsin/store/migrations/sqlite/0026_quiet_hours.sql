-- Owners' quiet hours: a span of the local day (start and end in minutes after local
-- midnight, in `zone`) in which bulk rings wait until it ends (docs/api.md, "Quiet
-- hours"). One row for each saver of an owner's: `saver` the app whose key saved it, or ''
-- for the owner himself (his apply to every ring of his; an app's to its reminders' rings).
-- Read by owner (the primary key's prefix) when a bulk ring is about to be sent.
CREATE TABLE quiet_hours (
    owner TEXT NOT NULL,
    saver TEXT NOT NULL,
    start_minute INTEGER NOT NULL CHECK (start_minute BETWEEN 0 AND 1439),
    end_minute INTEGER NOT NULL CHECK (end_minute BETWEEN 0 AND 1439),
    zone TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (owner, saver),
    CHECK (start_minute <> end_minute)
) WITHOUT ROWID;
