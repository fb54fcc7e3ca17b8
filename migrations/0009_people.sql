-- People management: accounts an admin deactivated, where each session was
-- opened (for its user's list of sessions), and one-time password reset
-- codes.

ALTER TABLE users ADD COLUMN deactivated INTEGER NOT NULL DEFAULT 0;

ALTER TABLE credentials ADD COLUMN client TEXT NOT NULL DEFAULT '';  -- User-Agent at login, shortened
ALTER TABLE credentials ADD COLUMN addr TEXT NOT NULL DEFAULT '';    -- client address at login

CREATE TABLE password_resets (
	code_hash  TEXT PRIMARY KEY,                 -- sha256 hex of the code
	user_id    INTEGER NOT NULL REFERENCES users(id),
	created_by TEXT NOT NULL,
	created_at TEXT NOT NULL,
	expires_at TEXT NOT NULL,
	used       INTEGER NOT NULL DEFAULT 0        -- redeemed, or replaced by a newer code
);
CREATE INDEX password_resets_user ON password_resets(user_id);
