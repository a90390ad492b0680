-- An owner's places: geofences ("home", "the office"), a centre in degrees and a radius in
-- metres, which the owner's device watches and reports crossings of. Read by owner, in id
-- order, as contacts are; `source` the app that saved one (NULL: the owner).
CREATE TABLE places (
    id TEXT NOT NULL PRIMARY KEY,
    owner TEXT NOT NULL,
    shard INTEGER NOT NULL,
    name TEXT NOT NULL,
    latitude REAL NOT NULL,
    longitude REAL NOT NULL,
    radius_m INTEGER NOT NULL,
    source TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX places_owner ON places (owner, id);
