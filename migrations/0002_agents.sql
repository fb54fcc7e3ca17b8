-- Bridges, agents, consent, steers and receipts, turns, approvals, and the
-- hash-chained timeline.

ALTER TABLE messages ADD COLUMN kind TEXT NOT NULL DEFAULT '';  -- '' chat | tool | progress

CREATE TABLE pairing_tokens (
	token_hash TEXT PRIMARY KEY,
	owner_id   INTEGER NOT NULL REFERENCES users(id),
	expires_at TEXT NOT NULL,
	used       INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE bridges (
	id         TEXT PRIMARY KEY,
	owner_id   INTEGER NOT NULL REFERENCES users(id),
	public_key TEXT NOT NULL UNIQUE,
	name       TEXT NOT NULL,
	created_at TEXT NOT NULL,
	revoked    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE agents (
	id          INTEGER PRIMARY KEY,
	owner_id    INTEGER NOT NULL REFERENCES users(id),
	name        TEXT NOT NULL,
	bridge_id   TEXT NOT NULL REFERENCES bridges(id),
	harness     TEXT NOT NULL,
	can_steer   INTEGER NOT NULL,
	policy      TEXT NOT NULL,            -- JSON wire.Policy
	policy_set  INTEGER NOT NULL DEFAULT 0, -- 1: the owner changed it in the hub; config no longer overrides
	status      TEXT NOT NULL DEFAULT 'offline',
	turn_id     TEXT NOT NULL DEFAULT '',
	turn_room   TEXT NOT NULL DEFAULT '',
	steered_by  TEXT NOT NULL DEFAULT '[]', -- JSON: senders whose steers reached the current turn
	UNIQUE (owner_id, name)
);

CREATE TABLE room_agents (
	room_id  INTEGER NOT NULL REFERENCES rooms(id),
	agent_id INTEGER NOT NULL REFERENCES agents(id),
	added_by TEXT NOT NULL,
	PRIMARY KEY (room_id, agent_id)
);

CREATE TABLE invitations (
	id           INTEGER PRIMARY KEY,
	room_id      INTEGER NOT NULL REFERENCES rooms(id),
	agent_id     INTEGER NOT NULL REFERENCES agents(id),
	requested_by TEXT NOT NULL,
	status       TEXT NOT NULL,   -- pending | accepted | declined
	created_at   TEXT NOT NULL,
	decided_at   TEXT
);

CREATE TABLE steers (
	id         TEXT PRIMARY KEY,
	message_id INTEGER NOT NULL,
	room_id    INTEGER NOT NULL,
	agent_id   INTEGER NOT NULL,
	sender     TEXT NOT NULL,
	status     TEXT NOT NULL,
	reason     TEXT NOT NULL DEFAULT '',
	detail     TEXT NOT NULL DEFAULT '',
	turn_id    TEXT NOT NULL DEFAULT '',
	expires_at TEXT,
	updated_at TEXT NOT NULL
);
CREATE INDEX steers_message ON steers(message_id);

CREATE TABLE approvals (
	id           TEXT PRIMARY KEY,
	agent_id     INTEGER NOT NULL REFERENCES agents(id),
	turn_id      TEXT NOT NULL,
	room         TEXT NOT NULL DEFAULT '',
	tool         TEXT NOT NULL,
	summary      TEXT NOT NULL,
	diff         TEXT NOT NULL DEFAULT '',
	payload      TEXT NOT NULL,
	payload_hash TEXT NOT NULL,
	steered_by   TEXT NOT NULL,      -- JSON
	tainted      INTEGER NOT NULL,
	status       TEXT NOT NULL,      -- pending | approved | denied | expired | voided
	decided_by   TEXT NOT NULL DEFAULT '',
	reason       TEXT NOT NULL DEFAULT '',
	expires_at   TEXT NOT NULL,
	created_at   TEXT NOT NULL
);

-- The persisted, hash-chained timeline per agent.
CREATE TABLE timeline (
	seq       INTEGER PRIMARY KEY,
	agent_id  INTEGER NOT NULL REFERENCES agents(id),
	kind      TEXT NOT NULL,
	turn_id   TEXT NOT NULL DEFAULT '',
	actor     TEXT NOT NULL DEFAULT '',
	body      TEXT NOT NULL,      -- JSON detail
	at        TEXT NOT NULL,
	prev_hash TEXT NOT NULL,
	hash      TEXT NOT NULL
);
CREATE INDEX timeline_agent ON timeline(agent_id, seq);
