-- The time zone data pending reminders' due times were worked out with: one row per zone
-- and tzdata release (`tzdata.IANA_VERSION`) that a process started with since the last
-- complete `tocsin rezone`, with a digest of the zone's rules in that release. A few
-- hundred rows per release, and nothing per reminder (docs/time.md).
CREATE TABLE zone_data (
    version TEXT NOT NULL,
    zone TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (version, zone)
);
