-- The chat around messages: threads, files, edits and deletions,
-- reactions, read markers, notification levels, the hub's settings, and
-- full-text search.

-- A reply names its thread's root (0: in the channel). A root keeps its
-- thread's reply count and last reply. An agent's streamed message is
-- found again by its item. A deleted message stays as a tombstone.
ALTER TABLE messages ADD COLUMN thread_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN files TEXT NOT NULL DEFAULT '[]';   -- JSON: [File]
ALTER TABLE messages ADD COLUMN item_id TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN partial INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN edited_at TEXT;
ALTER TABLE messages ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN deleted_by TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN reply_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN last_reply_id INTEGER NOT NULL DEFAULT 0;
CREATE INDEX messages_channel ON messages(room_id, id) WHERE thread_id = 0;
CREATE INDEX messages_thread ON messages(thread_id, id) WHERE thread_id > 0;
CREATE UNIQUE INDEX messages_item ON messages(author, turn_id, item_id) WHERE item_id != '';
CREATE INDEX messages_author ON messages(author, id);

-- What a message said before each edit or its deletion: the text an
-- agent's envelope wrapped is the first one.
CREATE TABLE message_edits (
	message_id INTEGER NOT NULL,
	seq        INTEGER NOT NULL,
	kind       TEXT NOT NULL,         -- edited | deleted
	old_text   TEXT NOT NULL,
	old_parts  TEXT NOT NULL DEFAULT '[]',
	by_user    TEXT NOT NULL,
	at         TEXT NOT NULL,
	PRIMARY KEY (message_id, seq)
);

-- Who each message mentions (unread mention counts).
CREATE TABLE message_mentions (
	user_id    INTEGER NOT NULL,
	room_id    INTEGER NOT NULL,
	message_id INTEGER NOT NULL,
	PRIMARY KEY (user_id, room_id, message_id)
);
CREATE INDEX message_mentions_message ON message_mentions(message_id);
INSERT INTO message_mentions (user_id, room_id, message_id)
	SELECT DISTINCT u.id, m.room_id, m.id FROM messages m, json_each(m.mentions) j JOIN users u ON u.name = json_extract(j.value, '$.user')
	WHERE json_extract(j.value, '$.kind') = 'user';

CREATE TABLE reactions (
	message_id INTEGER NOT NULL,
	emoji      TEXT NOT NULL,
	user_id    INTEGER NOT NULL,
	seq        INTEGER NOT NULL,
	PRIMARY KEY (message_id, emoji, user_id)
);

-- Read up to last_read (a message id); none: up to when they joined.
CREATE TABLE read_markers (
	user_id   INTEGER NOT NULL,
	room_id   INTEGER NOT NULL,
	last_read INTEGER NOT NULL,
	PRIMARY KEY (user_id, room_id)
);

CREATE TABLE notify_settings (
	user_id INTEGER NOT NULL,
	room_id INTEGER NOT NULL,
	level   TEXT NOT NULL,            -- all | mentions | none
	PRIMARY KEY (user_id, room_id)
);

-- Files whose bytes are in the object store; message_id once posted.
CREATE TABLE files (
	id          TEXT PRIMARY KEY,
	room_id     INTEGER NOT NULL,
	uploader_id INTEGER NOT NULL,
	name        TEXT NOT NULL,
	size        INTEGER NOT NULL,
	type        TEXT NOT NULL,
	sha256      TEXT NOT NULL,
	message_id  INTEGER NOT NULL DEFAULT 0,
	deleted     INTEGER NOT NULL DEFAULT 0,
	created_at  TEXT NOT NULL
);
CREATE INDEX files_uploader ON files(uploader_id, deleted);
CREATE INDEX files_message ON files(message_id) WHERE message_id > 0;

CREATE TABLE settings (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL               -- JSON
);

-- The thread an agent turn lives in; its approvals show there.
ALTER TABLE turns ADD COLUMN thread_id INTEGER NOT NULL DEFAULT 0;
CREATE INDEX turns_thread ON turns(thread_id) WHERE thread_id > 0;
ALTER TABLE approvals ADD COLUMN thread_id INTEGER NOT NULL DEFAULT 0;
-- A steer from a thread: the thread, and whether it must start a turn of
-- its own (following an ended one).
ALTER TABLE steers ADD COLUMN thread_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steers ADD COLUMN new_turn INTEGER NOT NULL DEFAULT 0;
ALTER TABLE steers ADD COLUMN follows TEXT NOT NULL DEFAULT '';

-- Full-text search over message text, kept in step with messages by
-- triggers (an edit or a deletion updates it).
CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='messages', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
	INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
	INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER messages_fts_au AFTER UPDATE OF text ON messages BEGIN
	INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
	INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
END;
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
