//go:build !linux

package bridge

import "net"

// checkPeer relies on the socket's 0600 mode where peer credentials are
// not available.
func checkPeer(c net.Conn) error { return nil }
