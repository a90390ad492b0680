-- The time zone data pending reminders' due times were worked out with: one row per zone
-- and tzdata release (`tzdata.IANA_VERSION`) that a process started with since the last
-- complete `tocsin rezone`, with a digest of the zone's rules in that release. A few
-- hundred rows per release, and nothing per reminder: `tocsin rezone` compares the digests
-- with the running release's to find the zones whose rules changed (docs/time.md).
CREATE TABLE zone_data (
    version text NOT NULL,
    zone text COLLATE "C" NOT NULL,
    digest text NOT NULL,
    PRIMARY KEY (version, zone)
);
