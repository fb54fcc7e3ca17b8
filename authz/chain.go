package authz

import (
	"crypto/sha256"
	"encoding/hex"
)

// ChainGenesis is the Prev of the first entry of an audit chain.
const ChainGenesis = ""

// ChainHash links entry to the one before it: the lower-case hex SHA-256 of
// prev + "\n" + entry.
func ChainHash(prev string, entry []byte) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write([]byte{'\n'})
	h.Write(entry)
	return hex.EncodeToString(h.Sum(nil))
}

// ChainEntry is one stored link: the hash it follows, its own hash, and the
// bytes that were hashed.
type ChainEntry struct {
	Prev string
	Hash string
	Body []byte
}

// VerifyChain checks that every entry's Hash is ChainHash(Prev, Body) and
// that every Prev is the previous entry's Hash. It returns the index of the
// first entry that fails, or (-1, true). The first entry's Prev is taken as
// given, so a segment can be checked on its own; from the start of a chain
// it must be ChainGenesis, which the caller checks.
func VerifyChain(entries []ChainEntry) (firstBad int, ok bool) {
	for i, e := range entries {
		if i > 0 && e.Prev != entries[i-1].Hash {
			return i, false
		}
		if e.Hash != ChainHash(e.Prev, e.Body) {
			return i, false
		}
	}
	return -1, true
}
