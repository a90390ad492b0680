-- A part's lease carries an epoch that rises each time a worker takes the part. Claims carry
-- the epoch their worker believes it holds, and apply only while it is still the lease's:
-- a worker whose lease ran out and was taken over changes nothing (a fencing token).
ALTER TABLE leases ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
