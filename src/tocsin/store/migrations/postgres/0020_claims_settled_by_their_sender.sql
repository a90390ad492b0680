-- A claim its sender settled goes at once: each claim row has an id, which the claim answers
-- with, and the sender's write of the claim's last unwritten firing deletes that row in the
-- same statement (INSERT_FIRINGS). Recovery then reads only the claims whose sender did not
-- write every firing before its hold ran out (a stopped or stalled worker). Before, every
-- claim stayed until its hold ran out, and recovery probed each of its rings' firings and
-- reminders, nearly all written: in a million rings spread over a minute that was 119 s of
-- the server's time and 5.3 million buffers read (docs/benchmarks.md, "The packed minute,
-- bisected"). A claim written by the release before gets its id here and is recovered, or
-- settled, as before.
ALTER TABLE claimed_rings ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE claimed_rings ADD CONSTRAINT claimed_rings_pkey PRIMARY KEY (id);
