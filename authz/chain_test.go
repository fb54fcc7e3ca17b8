package authz

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestChainHash(t *testing.T) {
	sum := sha256.Sum256([]byte("abc\n{\"a\":1}"))
	if got, want := ChainHash("abc", []byte(`{"a":1}`)), hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("ChainHash = %s, want %s", got, want)
	}
	// The separator keeps (prev, entry) pairs apart that concatenate alike.
	if ChainHash("ab", []byte("c")) == ChainHash("a", []byte("bc")) {
		t.Fatal("different (prev, entry) pairs share a hash")
	}
}

func buildChain(bodies ...string) []ChainEntry {
	var out []ChainEntry
	prev := ChainGenesis
	for _, b := range bodies {
		h := ChainHash(prev, []byte(b))
		out = append(out, ChainEntry{Prev: prev, Hash: h, Body: []byte(b)})
		prev = h
	}
	return out
}

func TestVerifyChain(t *testing.T) {
	cases := []struct {
		name   string
		mutate func([]ChainEntry) []ChainEntry
		bad    int
	}{
		{"OK", func(c []ChainEntry) []ChainEntry { return c }, -1},
		{"Empty", func(c []ChainEntry) []ChainEntry { return nil }, -1},
		{"SegmentOK", func(c []ChainEntry) []ChainEntry { return c[2:] }, -1},
		{"EditedBody", func(c []ChainEntry) []ChainEntry { c[2].Body = []byte("forged"); return c }, 2},
		{"EditedBodyRehashed", func(c []ChainEntry) []ChainEntry {
			c[1].Body = []byte("forged")
			c[1].Hash = ChainHash(c[1].Prev, c[1].Body)
			return c
		}, 2},
		{"DeletedEntry", func(c []ChainEntry) []ChainEntry { return append(c[:1], c[2:]...) }, 1},
		{"Reordered", func(c []ChainEntry) []ChainEntry { c[1], c[2] = c[2], c[1]; return c }, 1},
		{"EditedFirstHash", func(c []ChainEntry) []ChainEntry { c[0].Hash = "00"; return c }, 0},
		{"UpperCaseHashRejected", func(c []ChainEntry) []ChainEntry {
			c[3].Hash = upper(c[3].Hash)
			return c
		}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chain := c.mutate(buildChain("a", "b", "c", "d", "e"))
			bad, ok := VerifyChain(chain)
			if bad != c.bad || ok != (c.bad == -1) {
				t.Fatalf("VerifyChain = (%d, %v), want (%d, %v)", bad, ok, c.bad, c.bad == -1)
			}
		})
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
