-- Delivery from the log: a mention's steers are recorded by the projection
-- of its message (one append); turns and their outcomes; which event ended
-- a steer or approval at the hub (so the consumer that tells the bridge
-- finds them).
ALTER TABLE steers ADD COLUMN expected_turn TEXT NOT NULL DEFAULT '';
ALTER TABLE steers ADD COLUMN stop INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steers ADD COLUMN closed_seq INTEGER NOT NULL DEFAULT 0;
-- How a steer reached the agent (started, steered, delivered) once its
-- status moved on to the turn's outcome.
ALTER TABLE steers ADD COLUMN via TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN closed_seq INTEGER NOT NULL DEFAULT 0;
-- 1: the agent's bridge stopped announcing it; another of the owner's
-- bridges may take the name.
ALTER TABLE agents ADD COLUMN released INTEGER NOT NULL DEFAULT 0;
CREATE INDEX steers_agent ON steers(agent_id, status);
CREATE INDEX steers_turn ON steers(agent_id, turn_id);
CREATE INDEX steers_closed ON steers(closed_seq) WHERE closed_seq > 0;
CREATE INDEX approvals_agent ON approvals(agent_id, status);
CREATE INDEX approvals_pending ON approvals(status, expires_at);
CREATE INDEX approvals_closed ON approvals(closed_seq) WHERE closed_seq > 0;

CREATE TABLE turns (
	agent_id   INTEGER NOT NULL,
	turn_id    TEXT NOT NULL,
	room       TEXT NOT NULL DEFAULT '',
	started_at TEXT NOT NULL,
	ended_at   TEXT,
	status     TEXT NOT NULL DEFAULT 'running', -- running | completed | interrupted | failed
	stopped_by TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (agent_id, turn_id)
);

-- One event may reach clients as several items (a message and its
-- receipts; an agent gone and what that ended): the feed is keyed by the
-- event's sequence and the item's place in it.
CREATE TABLE feed_items (
	seq     INTEGER NOT NULL,
	idx     INTEGER NOT NULL,
	room_id INTEGER NOT NULL,
	user_id INTEGER NOT NULL DEFAULT 0,
	body    BLOB NOT NULL,
	PRIMARY KEY (seq, idx)
);
INSERT INTO feed_items (seq, idx, room_id, user_id, body) SELECT seq, 0, room_id, user_id, body FROM feed;
DROP TABLE feed;
ALTER TABLE feed_items RENAME TO feed;
CREATE INDEX feed_room ON feed(room_id, seq);
CREATE INDEX feed_user ON feed(user_id, seq);

-- One event may write several timeline entries (an agent removed from a
-- room and the approvals that voided): keyed by sequence and place.
CREATE TABLE timeline_entries (
	seq       INTEGER NOT NULL,
	idx       INTEGER NOT NULL,
	agent_id  INTEGER NOT NULL REFERENCES agents(id),
	kind      TEXT NOT NULL,
	turn_id   TEXT NOT NULL DEFAULT '',
	actor     TEXT NOT NULL DEFAULT '',
	body      TEXT NOT NULL,
	at        TEXT NOT NULL,
	prev_hash TEXT NOT NULL,
	hash      TEXT NOT NULL,
	PRIMARY KEY (seq, idx)
);
INSERT INTO timeline_entries SELECT seq, 0, agent_id, kind, turn_id, actor, body, at, prev_hash, hash FROM timeline;
DROP TABLE timeline;
ALTER TABLE timeline_entries RENAME TO timeline;
CREATE INDEX timeline_agent ON timeline(agent_id, seq, idx);
