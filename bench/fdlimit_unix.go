//go:build unix

package bench

import (
	"fmt"
	"syscall"
)

// raiseFDLimit makes room for need open files: the Go runtime already
// raises the soft limit to the hard one at start; past that, setrlimit
// raises the hard limit too where the process may (root, or
// CAP_SYS_RESOURCE). Children inherit the limit.
func raiseFDLimit(need uint64) (string, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return "", err
	}
	if l.Cur >= need {
		return fmt.Sprintf("open-files limit %d, enough", l.Cur), nil
	}
	old := l
	l.Cur, l.Max = need, max(l.Max, need)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return "", notHere{fmt.Sprintf("%d open files are needed and the limit is %d (hard %d); raising it failed (%v): raise it (ulimit -n) or ask for fewer --idle-sockets",
			need, old.Cur, old.Max, err)}
	}
	return fmt.Sprintf("raised the open-files limit from %d (hard %d) to %d with setrlimit", old.Cur, old.Max, need), nil
}
