-- The status board (`GET /v1/status`).
--
-- Circuit breakers live in each worker's memory (tocsin.delivery.isolation). A worker
-- writes the providers whose breaker is open (a JSON array, NULL for none) into its
-- heartbeat row at every lease renewal: the row is written every lease/2 already, is read
-- with the workers alive, and goes when the worker goes, so a breaker is never shown for a
-- worker that stopped, and no table grows.
ALTER TABLE workers ADD COLUMN breakers text;

-- Rings per minute by outcome and their lateness for the last hour read the firings due in
-- each minute, at most a fixed number a minute (`sample_rings`): a range scan of this index
-- per minute, covering state and sent_at so the rows need not be visited.
CREATE INDEX firings_due ON firings (due_at) INCLUDE (state, sent_at);
