-- The owner's own words, signed: the message statement (wire.Signed JSON)
-- of the steer's agent, which the router relays unchanged as
-- wire.Steer.Words and the bridge verifies.
ALTER TABLE steers ADD COLUMN words TEXT NOT NULL DEFAULT '';
