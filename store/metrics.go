package store

import (
	"context"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

// Counts for the metrics endpoint, read from the projection: every hub
// node reports the same cluster-wide figures.

func (s *Store) countBy(ctx context.Context, q string) (map[string]float64, error) {
	rows, err := s.db.r.QueryContext(ctx, q)
	if err != nil {
		return nil, wh.Wrap(err, "count")
	}
	defer rows.Close()
	out := map[string]float64{}
	for rows.Next() {
		var k string
		var n float64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, wh.Wrap(err, "count")
		}
		out[k] = n
	}
	return out, rows.Err()
}

// ApprovalCounts counts approval requests by state (pending, approved,
// denied, expired, voided).
func (s *Store) ApprovalCounts(ctx context.Context) (map[string]float64, error) {
	return s.countBy(ctx, `SELECT status, COUNT(*) FROM approvals GROUP BY status`)
}

// AgentCounts counts the agents of paired bridges by state (idle,
// working, offline, …).
func (s *Store) AgentCounts(ctx context.Context) (map[string]float64, error) {
	return s.countBy(ctx, `SELECT a.status, COUNT(*) FROM agents a JOIN bridges b ON b.id = a.bridge_id
		WHERE a.released = 0 AND b.revoked = 0 GROUP BY a.status`)
}

// UserCounts counts accounts: active and deactivated.
func (s *Store) UserCounts(ctx context.Context) (map[string]float64, error) {
	return s.countBy(ctx, `SELECT CASE deactivated WHEN 1 THEN 'deactivated' ELSE 'active' END, COUNT(*) FROM users GROUP BY 1`)
}
