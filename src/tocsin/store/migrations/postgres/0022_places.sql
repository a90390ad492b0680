-- An owner's places: geofences ("home", "the office"), a centre in degrees and a radius in
-- metres, which the owner's device watches and reports crossings of. Read by owner, in id
-- order, as contacts are; `source` the app that saved one (NULL: the owner).
CREATE TABLE places (
    id text COLLATE "C" NOT NULL PRIMARY KEY,
    owner text COLLATE "C" NOT NULL,
    shard smallint NOT NULL,
    name text NOT NULL,
    latitude double precision NOT NULL,
    longitude double precision NOT NULL,
    radius_m integer NOT NULL,
    source text COLLATE "C",
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX places_owner ON places (owner, id);
