package wire

import "testing"

func TestIsBridgeInbox(t *testing.T) {
	const id = "b0123456789ab"
	for _, c := range []struct {
		subject string
		want    bool
	}{
		{"_INBOX.b0123456789ab.Xyz12", true},
		{"_INBOX.b0123456789ab.Xyz12.7", true}, // nats.go's response mux
		{"_INBOX.b0123456789ab", false},        // the prefix alone
		{"_INBOX.b0123456789ab.", false},
		{"_INBOX.b0123456789ab..x", false},
		{"_INBOX.b0123456789ab.*", false},
		{"_INBOX.b0123456789ab.>", false},
		{"_INBOX.b0123456789ab.a b", false},
		{"_INBOX.b0123456789ab.a\tb", false},
		{"_INBOX.b0123456789abc.x", false}, // another bridge whose id extends this one
		{"_INBOX.bffffffffffff.x", false},  // another bridge
		{"_INBOX.x", false},
		{"wh.log.forged", false},
		{"wh.bridge.bffffffffffff.steer", false},
		{"$JS.API.STREAM.DELETE.WHEELHOUSE", false},
		{"$KV.wheelhouse-logins.x", false},
		{"", false},
	} {
		if got := IsBridgeInbox(id, c.subject); got != c.want {
			t.Errorf("IsBridgeInbox(%q, %q) = %v, want %v", id, c.subject, got, c.want)
		}
	}
	if IsBridgeInbox("", "_INBOX..x") || IsBridgeInbox("b.*", "_INBOX.b.*.x") {
		t.Error("a malformed bridge id has no inbox")
	}
	long := "_INBOX." + id + "."
	for len(long) <= maxInboxSubject {
		long += "a"
	}
	if IsBridgeInbox(id, long) {
		t.Error("an oversized reply subject was accepted")
	}
}
