-- A posted message is indexed for search by the projector once per
-- transaction (a batch of events), no longer by a trigger per row: FTS5
-- writes its pending entries to disk at every statement savepoint of the
-- transaction, so the trigger made one index segment per message. Edits and
-- deletions still update the index through their triggers; the projector
-- indexes the batch's new messages before any of them can change.
DROP TRIGGER messages_fts_ai;
