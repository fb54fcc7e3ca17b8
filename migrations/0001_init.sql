-- The read model projected from the event stream. Every row is derivable
-- from the stream: deleting this file and restarting rebuilds it.

CREATE TABLE projection (
	id          INTEGER PRIMARY KEY CHECK (id = 1),
	applied_seq INTEGER NOT NULL
);
INSERT INTO projection (id, applied_seq) VALUES (1, 0);

CREATE TABLE users (
	id            INTEGER PRIMARY KEY,           -- stream sequence that created it
	name          TEXT NOT NULL UNIQUE,
	display       TEXT NOT NULL DEFAULT '',
	password_hash TEXT NOT NULL,
	is_admin      INTEGER NOT NULL DEFAULT 0,
	created_at    TEXT NOT NULL
);

CREATE TABLE credentials (
	token_hash TEXT PRIMARY KEY,                 -- sha256 hex of the secret
	user_id    INTEGER NOT NULL REFERENCES users(id),
	kind       TEXT NOT NULL,                    -- session | token
	label      TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL,
	expires_at TEXT,                             -- NULL: never
	revoked    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX credentials_user ON credentials(user_id);

CREATE TABLE rooms (
	id         INTEGER PRIMARY KEY,
	name       TEXT NOT NULL UNIQUE,
	kind       TEXT NOT NULL,                    -- room | dm
	private    INTEGER NOT NULL DEFAULT 0,
	topic      TEXT NOT NULL DEFAULT '',
	created_by INTEGER NOT NULL REFERENCES users(id),
	created_at TEXT NOT NULL
);

CREATE TABLE members (
	room_id    INTEGER NOT NULL REFERENCES rooms(id),
	user_id    INTEGER NOT NULL REFERENCES users(id),
	role       TEXT NOT NULL,                    -- admin | member
	joined_seq INTEGER NOT NULL,
	PRIMARY KEY (room_id, user_id)
);
CREATE INDEX members_user ON members(user_id);

CREATE TABLE messages (
	id          INTEGER PRIMARY KEY,             -- stream sequence
	room_id     INTEGER NOT NULL REFERENCES rooms(id),
	author_kind TEXT NOT NULL,                   -- user | agent | system
	author      TEXT NOT NULL,                   -- user name or owner/agent
	text        TEXT NOT NULL,
	mentions    TEXT NOT NULL DEFAULT '[]',      -- JSON
	parts       TEXT NOT NULL DEFAULT '[]',      -- JSON
	turn_id     TEXT NOT NULL DEFAULT '',
	created_at  TEXT NOT NULL
);
CREATE INDEX messages_room ON messages(room_id, id);

-- What live clients receive, serialized once at apply time. Resume with
-- since=ID reads this table.
CREATE TABLE feed (
	seq     INTEGER PRIMARY KEY,
	room_id INTEGER NOT NULL,
	user_id INTEGER NOT NULL DEFAULT 0,         -- membership events: the user concerned
	body    BLOB NOT NULL
);
CREATE INDEX feed_room ON feed(room_id, seq);
CREATE INDEX feed_user ON feed(user_id, seq);
