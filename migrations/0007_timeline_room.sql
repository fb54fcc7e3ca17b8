-- The room where each timeline entry happened: anyone but the agent's owner
-- sees only the entries of rooms they are a member of.
ALTER TABLE timeline ADD COLUMN room TEXT NOT NULL DEFAULT '';
UPDATE timeline SET room = COALESCE(json_extract(body, '$.room'), '') WHERE json_valid(body) AND json_type(body) = 'object';
UPDATE timeline SET room = COALESCE((SELECT t.room FROM turns t WHERE t.agent_id = timeline.agent_id AND t.turn_id = timeline.turn_id), '')
	WHERE room = '' AND turn_id != '';
