package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The unread count reads at most unreadWindow channel messages, through
// the channel index, whoever wrote them: the author is filtered after the
// window, so someone who wrote every message of a big room does not make
// it read them all.
func TestUnreadCountStopsEarly(t *testing.T) {
	db, err := OpenDB(context.Background(), filepath.Join(t.TempDir(), "wh.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.r.Query(`EXPLAIN QUERY PLAN SELECT COUNT(*) FROM (SELECT author FROM messages WHERE room_id = ? AND thread_id = 0 AND id > ? AND deleted = 0
		ORDER BY id DESC LIMIT ?) WHERE author != ?`, 1, 0, unreadWindow, "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	p := strings.Join(plan, "; ")
	if !strings.Contains(p, "messages_channel") || strings.Contains(p, "TEMP B-TREE") {
		t.Fatalf("the unread count does not walk the channel index newest first: %s", p)
	}
}
