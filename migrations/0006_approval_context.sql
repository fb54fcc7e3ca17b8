-- Where an approved call runs and what data reached its turn, as the
-- approval card shows them.
ALTER TABLE approvals ADD COLUMN sandbox TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN data TEXT NOT NULL DEFAULT '[]'; -- JSON: pasted, code, quote, forwarded, peer-agent
