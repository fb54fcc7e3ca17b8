-- Finding steers that never got an answer (a hub that stopped mid-delivery).
CREATE INDEX steers_status ON steers(status, updated_at);
