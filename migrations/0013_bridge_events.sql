-- The bridge events the hub recorded: turn events and agent output that a
-- bridge sends from its outbox until the hub acknowledges them. A retry,
-- however late (after a hub restart, a leader election, a long outage),
-- is applied once: JetStream's duplicate window is only minutes.
CREATE TABLE bridge_events (
	id TEXT PRIMARY KEY, -- bridge id / the bridge's event id
	seq INTEGER NOT NULL -- the event that recorded it
) WITHOUT ROWID;
