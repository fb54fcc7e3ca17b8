package web

import (
	"testing"
	"time"
)

func TestLoginThrottle(t *testing.T) {
	now := time.Unix(0, 0)
	th := newThrottle(func() time.Time { return now })
	for i := 0; i < loginMaxFails-1; i++ {
		th.fail("Bob")
	}
	if th.locked("bob") != 0 {
		t.Fatal("locked before the limit")
	}
	th.fail("bob")
	if th.locked("BOB") == 0 {
		t.Fatal("not locked at the limit (names are case-insensitive)")
	}
	if th.locked("alice") != 0 {
		t.Fatal("another name is locked")
	}
	now = now.Add(loginLockout + time.Second)
	if th.locked("bob") != 0 {
		t.Fatal("still locked after the lockout")
	}
	th.fail("carol")
	now = now.Add(loginWindow + time.Second)
	for i := 0; i < loginMaxFails-1; i++ {
		th.fail("carol")
	}
	if th.locked("carol") != 0 {
		t.Fatal("failures older than the window counted")
	}
	th.succeed("carol")
	th.fail("carol")
	if th.locked("carol") != 0 {
		t.Fatal("a success did not reset the count")
	}
}
