package local

import (
	"crypto/rand"
	"encoding/base32"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

func publicKey(c *bridge.Credentials) string {
	kp, err := nkeys.FromSeed([]byte(c.Seed))
	if err != nil {
		return ""
	}
	pub, _ := kp.PublicKey()
	return pub
}

// randomPassword is 20 characters from a 32-letter alphabet (100 bits).
func randomPassword() string {
	b := make([]byte, 13)
	rand.Read(b)
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))[:20]
}
