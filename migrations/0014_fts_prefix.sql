-- Prefix search (a word ending in *) read the postings of every word
-- with that prefix and merged them before it could return the newest
-- match, so it grew with the history (20 ms at 100k messages, 121 ms at
-- 1M). FTS5 prefix indexes for 2, 3 and 4 characters store those merged
-- lists, read newest first like a word's own: the common short prefixes
-- stay flat. Longer prefixes match few words and stay fast without one.
-- The index is rebuilt once, here (about as long as a first index of the
-- messages; a large hub spends that at its first start on this version).
DROP TABLE messages_fts;
CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='messages', content_rowid='id', tokenize='unicode61 remove_diacritics 2', prefix='2 3 4');
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
