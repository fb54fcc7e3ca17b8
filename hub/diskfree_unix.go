//go:build linux || darwin || freebsd || netbsd || openbsd

package hub

import "syscall"

// diskFree is the space an unprivileged writer has left on the file system
// holding path.
func diskFree(path string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
