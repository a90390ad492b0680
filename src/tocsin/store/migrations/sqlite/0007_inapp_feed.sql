-- The in-app feed reads an owner's in-app firings still fresh when a page connects
-- (`feed_firings`): a range scan of this index over (owner, deadline > now). Only in-app
-- firings enter it, so other channels' claims and results pay nothing for it.
CREATE INDEX firings_feed ON firings (owner, deadline) WHERE channel = 'inapp';
