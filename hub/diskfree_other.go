//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package hub

// diskFree is not known on this system: the store's own limit applies.
func diskFree(string) (uint64, bool) { return 0, false }
