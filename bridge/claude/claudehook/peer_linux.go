package claudehook

import (
	"fmt"
	"net"
	"syscall"
)

// peerUID is the uid of the process at the other end of a unix socket
// (SO_PEERCRED: for the connecting side, the listener's uid when it
// listened). The bridge's control socket checks its clients the same way
// (bridge/peer_linux.go); this package imports nothing of ours.
func peerUID(c net.Conn) (int, bool, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, false, fmt.Errorf("not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, false, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, false, err
	}
	if cerr != nil {
		return 0, false, cerr
	}
	return int(cred.Uid), true, nil
}
