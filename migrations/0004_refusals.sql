-- The stream this read model was built from (the id of its first event), so
-- a database from another deployment is refused; and the events the
-- projection refused, so a retried append learns the first outcome.
ALTER TABLE projection ADD COLUMN first_event TEXT NOT NULL DEFAULT '';

CREATE TABLE refusals (
	seq      INTEGER PRIMARY KEY,
	event_id TEXT NOT NULL,
	code     TEXT NOT NULL,
	message  TEXT NOT NULL,
	reason   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX refusals_event ON refusals(event_id);
