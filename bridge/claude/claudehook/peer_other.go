//go:build !linux

package claudehook

import "net"

// peerUID is not available here: the socket folder's owner and mode
// (ownedPrivateDir) are what the hook checks.
func peerUID(net.Conn) (int, bool, error) { return 0, false, nil }
