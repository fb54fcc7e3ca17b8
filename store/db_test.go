package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenDBRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wh.db")
	db, err := OpenDB(context.Background(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.Exec(`INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = OpenDB(context.Background(), path, 0)
	if err == nil || !strings.Contains(err.Error(), "newer wheelhouse") {
		t.Fatalf("opened a database from a newer binary: %v", err)
	}
}

func TestOpenDBMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wh.db")
	for i := 0; i < 2; i++ {
		db, err := OpenDB(context.Background(), path, 0)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		var n int
		db.r.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n)
		if ms, _ := loadMigrations(); n != len(ms) {
			t.Fatalf("%d migrations recorded, want %d", n, len(ms))
		}
		db.Close()
	}
}
