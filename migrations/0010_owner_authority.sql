-- The owner's authority: the devices each bridge trusts (as the bridge
-- reports them), room ceilings, which device signed a decision and which
-- decisions a bridge refused, and moderated mentions.
CREATE TABLE devices (
	bridge_id  TEXT NOT NULL REFERENCES bridges(id),
	id         TEXT NOT NULL,
	name       TEXT NOT NULL,
	kind       TEXT NOT NULL,
	public_key TEXT NOT NULL,
	added_at   TEXT NOT NULL,
	revoked    INTEGER NOT NULL DEFAULT 0,
	revoked_at TEXT,
	PRIMARY KEY (bridge_id, id)
);
CREATE INDEX devices_id ON devices(id);
ALTER TABLE room_agents ADD COLUMN ceiling TEXT NOT NULL DEFAULT 'normal'; -- normal | ask | read-only
ALTER TABLE approvals ADD COLUMN decided_device TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN unverified TEXT NOT NULL DEFAULT '';
-- A held (moderated) mention the owner forwarded: by whom, and the signed
-- forward the bridge verifies.
ALTER TABLE steers ADD COLUMN forwarded_by TEXT NOT NULL DEFAULT '';
ALTER TABLE steers ADD COLUMN forward TEXT NOT NULL DEFAULT '';
