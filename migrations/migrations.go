// Package migrations holds the numbered SQL files that build the hub's SQLite
// read model, embedded into the binary. Append-only: never edit a released
// file; add the next number.
package migrations

import "embed"

// FS holds NNNN_name.sql files, applied in order.
//
//go:embed *.sql
var FS embed.FS
